#pragma once
// Programmatic dependent launch (sm_90): a kernel launched with launch_pdl
// may be scheduled while the stream's previous kernel drains, so the gap
// between back-to-back kernels (the attention kernel, its split-KV merge,
// the next call) shrinks from a launch to a wait. Such a kernel must call
// grid_dependency_wait() before it reads or writes global memory; it may call
// allow_dependents() once its own dependents may be scheduled. On older
// devices the attribute is ignored and both calls are no-ops.
#include <cuda_runtime.h>

#include <cstddef>

namespace strata::cuda {

// Waits until the previous kernel in the stream has finished and its writes
// are visible.
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Lets the next PDL kernel in the stream be scheduled (it still waits for
// this grid's completion before touching memory).
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

template <class... Params, class... Args>
cudaError_t launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                       cudaStream_t st, Args... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

}  // namespace strata::cuda
