#pragma once
// What the two matrix-vector kernels (matmul_gemv.cu: b unit-stride along
// K; matmul_gemv_rows.cu: b row-major) share: f32 widening and rounding of
// their element types, the L2 prefetch they issue before waiting on the
// previous kernel, and the switch that sends their calls to cuBLAS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

namespace strata::cuda::gemv {

template <class T>
__device__ __forceinline__ float to_f(T x) {
  return static_cast<float>(x);
}
template <class T>
__device__ __forceinline__ T from_f(float x) {
  return static_cast<T>(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

// Asks L2 for the line at p: no data moves into registers or L1, so it is
// safe before grid_dependency_wait() even for memory the previous kernel
// writes (its writes land in L2).
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// STRATA_CUDA_GEMV=0 (read once per process) sends both kernels' calls to
// cuBLAS (A/B runs).
inline bool disabled() {
  static const bool off = [] {
    const char* e = std::getenv("STRATA_CUDA_GEMV");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  return off;
}

}  // namespace strata::cuda::gemv
