#pragma once
// How the elementwise engine and the gemv launch their kernels, chosen once
// per process by STRATA_CUDA_LAUNCH (an A/B switch for the host cost of a
// small op's launch, docs/guide/cuda-runtime.md, "Launch cost"):
//   pdl     (default) cudaLaunchKernelEx with programmatic dependent launch
//   ex      cudaLaunchKernelEx with no attribute
//   plain   a <<<>>> launch (cudaLaunchKernel)
//   graph   PDL while this thread captures a strata Graph, plain otherwise:
//           the dependent-kernel overlap where a replay benefits from it,
//           the plain launch's host cost for eager calls
// The kernels call grid_dependency_wait() first, which is a no-op when they
// were not launched with PDL, so every mode computes the same thing.
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/pdl_launch.cuh"

namespace strata::cuda {

enum class LaunchMode : int { pdl = 0, ex = 1, plain = 2, graph = 3 };

// The process's mode (STRATA_CUDA_LAUNCH, read on the first call; an unknown
// value throws strata::Error naming the accepted ones).
LaunchMode launch_mode();
// Replaces the mode for the rest of the process (benchmarks and tests only).
void set_launch_mode(LaunchMode m);
// True while this thread records a strata Graph (DeviceRuntime::begin_capture
// to end_capture / abort_capture).
bool thread_capturing() noexcept;

template <class... Params, class... Args>
cudaError_t launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                          cudaStream_t st, Args... args) {
  const LaunchMode m = launch_mode();
  if (m == LaunchMode::pdl || (m == LaunchMode::graph && thread_capturing()))
    return launch_pdl(kernel, grid, block, smem, st, args...);
  if (m == LaunchMode::ex) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
  }
  kernel<<<grid, block, smem, st>>>(args...);
  return cudaGetLastError();
}

}  // namespace strata::cuda
