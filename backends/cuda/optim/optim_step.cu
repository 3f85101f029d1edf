// cuda adamw_step_ / sgd_step_ as a multi-tensor apply (chunk_table.cuh):
// each block updates one chunk of kChunk elements of one tensor, four
// elements per thread per access (vector loads and stores) when every array
// of the tensor is aligned to four elements, one at a time otherwise. No
// device memory is allocated and nothing is copied to the device, so a CUDA
// graph can capture the launches. The per-element maths is
// common/optim_functors.hpp's, shared with cpu; the vector path applies it
// to each element exactly as the scalar path does.
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/optim_functors.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/optim/chunk_table.cuh"
#include "cuda/optim/optim_cuda.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kIlp = 2;  // vectors per array in flight per thread
constexpr std::int64_t kChunk = 65536;

// The kernel's argument: everything one launch updates.
template <class C>
struct StepParams {
  ChunkTable<OptimTensor, 160, 3072> tab;
  fn::OptimCoef<C> k;
};
static_assert(sizeof(StepParams<double>) <= kMaxParamBytes,
              "the chunk table must fit a launch's parameters");

// g as the update reads it: times grad_scale when there is one, the product
// rounded to G as a separate mul_out would store it. __fmul_rn / __dmul_rn
// are never contracted into a neighbouring add.
template <class G, class C>
__device__ __forceinline__ C grad_in(G g, const fn::OptimCoef<C>& k) {
  const C gi = cvt<C>(g);
  if (!k.scale_grad) return gi;
  C s;
  if constexpr (std::is_same_v<C, double>)
    s = __dmul_rn(gi, k.grad_scale);
  else
    s = __fmul_rn(gi, k.grad_scale);
  if constexpr (std::is_same_v<G, C>)
    return s;
  else
    return cvt<C>(cvt<G>(s));
}

// One element: p the stored param (not read with a master), g the grad,
// s0 / s1 the state (s0 used when has_s0; s1 by AdamW only), mst the master.
template <class T, class G, class C>
__device__ __forceinline__ void update(T& p, G g, C& s0, C& s1, float& mst, bool has_s0,
                                       bool has_master, const fn::OptimCoef<C>& k) {
  const C pi = has_master ? static_cast<C>(mst) : cvt<C>(p);
  const C gi = grad_in<G, C>(g, k);
  C next;
  if (k.adamw) {
    next = fn::adamw_update(pi, gi, s0, s1, k);
  } else {
    C buf = has_s0 && !k.first_step ? s0 : C(0);
    next = fn::sgd_update(pi, gi, buf, k);
    if (has_s0) s0 = buf;
  }
  if (has_master) {
    const float stored = static_cast<float>(next);
    mst = stored;
    p = cvt<T>(stored);  // the stored master, rounded
  } else {
    p = cvt<T>(next);
  }
}

// T the param's stored type, G the grad's, C the compute and state type.
// __grid_constant__: the table is read in place in the launch's parameter
// space, never copied per thread.
template <class T, class G, class C>
__global__ void __launch_bounds__(kThreads, sizeof(C) == 4 ? 2 : 1)
    optim_step_kernel(const __grid_constant__ StepParams<C> prm) {
  const OptimTensor& t = prm.tab.tensors[prm.tab.tensor_of[blockIdx.x]];
  const std::int64_t begin = static_cast<std::int64_t>(prm.tab.chunk[blockIdx.x]) * kChunk;
  const std::int64_t end = t.numel < begin + kChunk ? t.numel : begin + kChunk;
  T* p = static_cast<T*>(t.param);
  const G* g = static_cast<const G*>(t.grad);
  C* s0 = static_cast<C*>(t.state0);
  C* s1 = static_cast<C*>(t.state1);
  float* master = static_cast<float*>(t.master);
  const fn::OptimCoef<C> k = prm.k;
  const bool has_s0 = s0 != nullptr, has_s1 = s1 != nullptr, has_master = master != nullptr;
  const bool aligned = vec4_aligned<T>(p) && vec4_aligned<G>(g) &&
                       (!has_s0 || vec4_aligned<C>(s0)) && (!has_s1 || vec4_aligned<C>(s1)) &&
                       (!has_master || vec4_aligned<float>(master));
  std::int64_t scalar_from = begin;
  if (aligned) {
    // kIlp vectors of every array loaded before any is updated: the loads
    // of one thread overlap instead of waiting on the previous stores.
    const std::int64_t nv = (end - begin) / 4;
    for (std::int64_t v0 = threadIdx.x; v0 < nv; v0 += kIlp * kThreads) {
      Vec4<T> pv[kIlp]{};
      Vec4<G> gv[kIlp]{};
      Vec4<C> s0v[kIlp]{}, s1v[kIlp]{};
      Vec4<float> mv[kIlp]{};
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const std::int64_t i = begin + 4 * (v0 + u * kThreads);
        if (v0 + u * kThreads >= nv) break;
        gv[u] = *reinterpret_cast<const Vec4<G>*>(g + i);
        if (has_master)
          mv[u] = *reinterpret_cast<const Vec4<float>*>(master + i);
        else
          pv[u] = *reinterpret_cast<const Vec4<T>*>(p + i);
        if (has_s0) s0v[u] = *reinterpret_cast<const Vec4<C>*>(s0 + i);
        if (has_s1) s1v[u] = *reinterpret_cast<const Vec4<C>*>(s1 + i);
      }
#pragma unroll
      for (int u = 0; u < kIlp; ++u) {
        const std::int64_t i = begin + 4 * (v0 + u * kThreads);
        if (v0 + u * kThreads >= nv) break;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          update<T, G, C>(pv[u].v[j], gv[u].v[j], s0v[u].v[j], s1v[u].v[j], mv[u].v[j], has_s0,
                          has_master, k);
        *reinterpret_cast<Vec4<T>*>(p + i) = pv[u];
        if (has_master) *reinterpret_cast<Vec4<float>*>(master + i) = mv[u];
        if (has_s0) *reinterpret_cast<Vec4<C>*>(s0 + i) = s0v[u];
        if (has_s1) *reinterpret_cast<Vec4<C>*>(s1 + i) = s1v[u];
      }
    }
    scalar_from = begin + 4 * nv;
  }
  for (std::int64_t i = scalar_from + threadIdx.x; i < end; i += kThreads) {
    T pi{};
    C a = C(0), b = C(0);
    float m = 0.0f;
    if (has_master)
      m = master[i];
    else
      pi = p[i];
    if (has_s0) a = s0[i];
    if (has_s1) b = s1[i];
    update<T, G, C>(pi, g[i], a, b, m, has_s0, has_master, k);
    p[i] = pi;
    if (has_master) master[i] = m;
    if (has_s0) s0[i] = a;
    if (has_s1) s1[i] = b;
  }
}

template <class T, class G>
void launch_all(const OptimStepArgs& a) {
  using C = compute_t<T>;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  StepParams<C> prm{};
  prm.k = fn::optim_coef<C>(a);
  for_each_launch(prm.tab, a.tensors, a.count, kChunk, [&](int nb) {
    optim_step_kernel<T, G, C><<<nb, kThreads, 0, st>>>(prm);
    CUDA_CHECK_LAUNCH();
  });
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
