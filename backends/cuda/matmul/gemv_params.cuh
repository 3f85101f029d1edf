#pragma once
// The kernel argument of the gemv kernels for b unit-stride along K
// (gemv_kernel in matmul_gemv.cu, gemv16_kernel in gemv16_ffma.cuh;
// gemv16_mma.cuh takes it as a template argument), and how they widen a
// 16-byte load of their element type to f32. Included by matmul_gemv.cu
// only: the anonymous namespace keeps its kernels private to that file.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/matmul/gemv_common.cuh"

namespace strata::cuda {
namespace {

// out [M, N] (+)= a [M, K] b [K, N] (+ bias): a's rows and b's columns (W's
// rows) unit-stride along K.
struct GemvParams {
  const void* a;
  const void* b;
  const void* bias;
  void* out;
  std::int64_t M, N, K;
  std::int64_t a_row_stride, b_col_stride, out_row_stride, out_col_stride, bias_stride;
  bool accumulate;
};

template <class T>
struct Lanes;  // n elements of T in one 16-byte load, widened to float
template <>
struct Lanes<float> {
  static constexpr int n = 4;
  using Raw = float4;
  __device__ static void widen(const Raw& v, float* f) {
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
  }
};
template <class H2, float2 (*cvt)(H2)>
struct HalfLanes {
  static constexpr int n = 8;
  using Raw = uint4;
  __device__ static void widen(const Raw& v, float* f) {
    const auto* h = reinterpret_cast<const H2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = cvt(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
};
__device__ float2 bf2_to_f2(__nv_bfloat162 x) { return __bfloat1622float2(x); }
__device__ float2 h2_to_f2(__half2 x) { return __half22float2(x); }
template <>
struct Lanes<__nv_bfloat16> : HalfLanes<__nv_bfloat162, bf2_to_f2> {};
template <>
struct Lanes<__half> : HalfLanes<__half2, h2_to_f2> {};

using gemv::from_f;
using gemv::prefetch_l2;
using gemv::to_f;

}  // namespace
}  // namespace strata::cuda
