#pragma once
// What the two matrix-vector kernels (matmul_gemv.cu: b unit-stride along
// K; matmul_gemv_multirow.cu: b row-major) share: f32 widening and rounding of
// their element types, the L2 prefetch they issue before waiting on the
// previous kernel, the switch that sends their calls to cuBLAS, the calls
// both refuse, their row limits' reading, the dtype dispatch and the
// argument fields they fill alike (call_params).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <cstring>

#include "strata/error.hpp"
#include "strata/matmul_args.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda::gemv {

// A gemv kernel argument P (GemvParams, MultirowParams) with what both forms
// take the same way from the call: pointers, sizes, the output's and the
// bias's strides and accumulate. The caller sets a's and b's strides.
template <class P>
P call_params(const MatmulArgs& g) {
  P p{};
  p.a = g.a.data;
  p.b = g.b.data;
  p.bias = g.bias.data;
  p.out = g.out.data;
  p.M = g.M;
  p.N = g.N;
  p.K = g.K;
  p.out_row_stride = g.out.strides[0];
  p.out_col_stride = g.out.strides[1];
  p.bias_stride = g.bias.data != nullptr ? g.bias.strides[0] : 0;
  p.accumulate = g.accumulate;
  return p;
}

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
inline bool disabled() { return !tuning().cuda_gemv; }

// Why neither kernel takes g, whatever its shape (nullptr: both may): the
// switch above, f64, a batch.
inline const char* refusal(const MatmulArgs& g) {
  if (disabled()) return "STRATA_CUDA_GEMV=0";
  if (g.out.dtype == DType::f64) return "f64 goes to cuBLAS";
  if (g.batch_rank != 0) return "batched";
  return nullptr;
}

// The row limit `value` of switch `var` (strata/tuning.hpp): `dflt` when
// unset (0), else an integer in [1, most] (a strata::Error otherwise). The
// callers read it once per process.
inline int rows_limit(const char* var, std::int64_t value, int dflt, int most) {
  if (value == 0) return dflt;
  check(value <= most, "matmul", var, " is ", value, "; expected 1 to ", most);
  return int(value);
}

template <class T>
struct Type {
  using type = T;
};

// f(Type<T>{}) for out's element type T: f32, bf16 or f16 (the dtypes
// refusal() lets through).
template <class F>
void for_dtype(DType dt, F&& f) {
  switch (dt) {
    case DType::f32:
      f(Type<float>{});
      break;
    case DType::bf16:
      f(Type<__nv_bfloat16>{});
      break;
    default:
      f(Type<__half>{});
      break;
  }
}

}  // namespace strata::cuda::gemv
