// cuda adamw_step_ / sgd_step_ as a multi-tensor apply (PyTorch's fused
// AdamW, apex): the launcher cuts every tensor of the call into chunks of
// kChunk elements and fills a table (the tensors' addresses and sizes, and
// for each block the tensor and chunk it updates) that the kernel takes by
// value as its one argument. A launch covers up to kMaxBlocks chunks of up
// to kMaxTensors tensors; the launcher starts a new table when either runs
// out (a tensor cut there carries over), so all the parameters of a model
// take a few launches. No device memory is allocated and nothing is copied
// to the device: the table travels in the launch's parameter space, so a
// CUDA graph can capture the launches. The per-element maths is
// common/optim_functors.hpp's, shared with cpu.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/optim_functors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/optim/optim_cuda.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 512;
constexpr std::int64_t kChunk = 65536;
constexpr int kMaxTensors = 36;
constexpr int kMaxBlocks = 320;

// The kernel's argument: everything one launch updates.
template <class C>
struct ChunkTable {
  OptimTensor tensors[kMaxTensors];
  int chunk[kMaxBlocks];                // block b updates chunk[b] of ...
  unsigned char tensor_of[kMaxBlocks];  // ... tensors[tensor_of[b]]
  fn::OptimCoef<C> k;
};
// Kernel parameters are limited to 4 KiB on every architecture we build for.
static_assert(sizeof(ChunkTable<double>) <= 4000, "the chunk table must fit a launch's parameters");
static_assert(kMaxTensors <= 255, "tensor_of is one byte");

// T the param's stored type, G the grad's, C the compute and state type.
// __grid_constant__: the table is read in place in the launch's parameter
// space, never copied per thread.
template <class T, class G, class C>
__global__ void __launch_bounds__(kThreads)
    optim_step_kernel(const __grid_constant__ ChunkTable<C> tab) {
  const OptimTensor& t = tab.tensors[tab.tensor_of[blockIdx.x]];
  const std::int64_t begin = static_cast<std::int64_t>(tab.chunk[blockIdx.x]) * kChunk;
  const std::int64_t end = t.numel < begin + kChunk ? t.numel : begin + kChunk;
  T* p = static_cast<T*>(t.param);
  const G* g = static_cast<const G*>(t.grad);
  C* s0 = static_cast<C*>(t.state0);
  C* s1 = static_cast<C*>(t.state1);
  float* master = static_cast<float*>(t.master);
  const fn::OptimCoef<C> k = tab.k;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const C pi = master != nullptr ? static_cast<C>(master[i]) : cvt<C>(p[i]);
    const C gi = cvt<C>(g[i]);
    C next;
    if (k.adamw) {
      C m = s0[i], v = s1[i];
      next = fn::adamw_update(pi, gi, m, v, k);
      s0[i] = m;
      s1[i] = v;
    } else {
      C buf = s0 != nullptr && !k.first_step ? s0[i] : C(0);
      next = fn::sgd_update(pi, gi, buf, k);
      if (s0 != nullptr) s0[i] = buf;
    }
    if (master != nullptr) {
      const float stored = static_cast<float>(next);
      master[i] = stored;
      p[i] = cvt<T>(stored);  // the stored master, rounded
    } else {
      p[i] = cvt<T>(next);
    }
  }
}

template <class T, class G>
void launch_all(const OptimStepArgs& a) {
  using C = compute_t<T>;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  ChunkTable<C> tab{};
  tab.k = fn::optim_coef<C>(a);
  int nt = 0, nb = 0;
  auto launch = [&] {
    optim_step_kernel<T, G, C><<<nb, kThreads, 0, st>>>(tab);
    CUDA_CHECK_LAUNCH();
    nt = 0;
    nb = 0;
  };
  for (int i = 0; i < a.count; ++i) {
    const OptimTensor& src = a.tensors[i];
    const std::int64_t chunks = (src.numel + kChunk - 1) / kChunk;
    for (std::int64_t c = 0; c < chunks; ++c) {
      if (c == 0 || nt == 0) tab.tensors[nt++] = src;  // a cut tensor starts the next table
      tab.tensor_of[nb] = static_cast<unsigned char>(nt - 1);
      tab.chunk[nb] = static_cast<int>(c);
      ++nb;
      if (nb == kMaxBlocks || (nt == kMaxTensors && c == chunks - 1)) launch();
    }
  }
  if (nb > 0) launch();
}

template <DType D>
void optim_typed(const OptimStepArgs& a) {
  using T = cuda_t<D>;
  if constexpr (D == DType::f16 || D == DType::bf16) {
    if (a.grad_dtype == DType::f32) return launch_all<T, float>(a);
  }
  launch_all<T, T>(a);
}

}  // namespace

void optim_step(const OptimStepArgs& a) {
  switch (a.param_dtype) {
    case DType::f32:
      return optim_typed<DType::f32>(a);
    case DType::f64:
      return optim_typed<DType::f64>(a);
    case DType::f16:
      return optim_typed<DType::f16>(a);
    case DType::bf16:
      return optim_typed<DType::bf16>(a);
    default:
      fail("adamw_step_", "no cuda kernel for params of ", dtype_name(a.param_dtype));
  }
}

}  // namespace strata::cuda
