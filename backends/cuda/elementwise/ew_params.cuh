#pragma once
// The elementwise engine's building blocks (engine.cuh; the row kernels use
// them too): the compute type of a stored type and conversions between
// stored types, 32-bit fast division, the kernels' argument (every
// operand's strides over one iteration) with the offsets it decodes, and
// 16-byte vector loads and stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cuda/std/tuple>
#include <type_traits>
#include <utility>

#include "common/convert.hpp"
#include "strata/dtype.hpp"
#include "strata/iter_args.hpp"

namespace strata::cuda {

// ---- stored types and conversions --------------------------------------------------
template <class T>
inline constexpr bool is_narrow_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The compute type of a floating stored type: f32 for f16/bf16/f32, f64 for f64.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Any stored type to any stored type, as common/convert.hpp (f16/bf16 via f32,
// rounded to nearest even).
template <class To, class From>
__host__ __device__ __forceinline__ To cvt(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, __half>) {
    return cvt<To>(__half2float(x));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return cvt<To>(__bfloat162float(x));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(fn::convert_native<float>(x));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(fn::convert_native<float>(x));
  } else {
    return fn::convert_native<To>(x);
  }
}

// ---- fast division ------------------------------------------------------------------
// n / d for 0 <= n < 2^31 with one multiply-high (Granlund-Montgomery, as
// PyTorch's IntDivider).
struct FastDiv {
  std::uint32_t d = 1, m = 1, s = 0;
  FastDiv() = default;
  explicit FastDiv(std::uint32_t div) : d(div) {
    s = 0;
    while (s < 32 && (std::uint64_t(1) << s) < div) ++s;
    const std::uint64_t one = 1;
    m = static_cast<std::uint32_t>(((one << 32) * ((one << s) - div)) / div + 1);
  }
  __device__ __forceinline__ std::uint32_t div(std::uint32_t n) const {
    return (__umulhi(n, m) + n) >> s;
  }
};

// ---- kernel arguments ---------------------------------------------------------------
// Dims are stored innermost first (shape[0] is IterArgs' shape[ndim - 1]).
template <int N, class I>
struct EwParams {
  int ndim;
  std::int64_t numel;
  I shape[kMaxDims];
  FastDiv shape_div[kMaxDims];
  I strides[N][kMaxDims];
  char* ptr[N];
};

// Element offsets of every operand at linear index `idx` (in elements of
// the iteration, innermost dim fastest).
template <int N, class I>
__device__ __forceinline__ void decode(const EwParams<N, I>& p, I idx, I (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
  for (int j = 0; j < kMaxDims - 1; ++j) {
    if (j >= p.ndim - 1) break;
    I q;
    if constexpr (sizeof(I) == 4)
      q = static_cast<I>(p.shape_div[j].div(static_cast<std::uint32_t>(idx)));
    else
      q = idx / p.shape[j];
    const I r = idx - q * p.shape[j];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * p.strides[k][j];
    idx = q;
  }
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] += idx * p.strides[k][p.ndim - 1];
}

template <class T>
__device__ __forceinline__ T ld(const char* base, std::int64_t off) {
  return reinterpret_cast<const T*>(base)[off];
}

// VEC elements of T at p (aligned to min(16, VEC * sizeof(T)) bytes).
template <class T, int VEC>
struct alignas(sizeof(T) * VEC < 16 ? sizeof(T) * VEC : 16) Vec {
  T v[VEC];
};
template <class T, int VEC>
__device__ __forceinline__ Vec<T, VEC> ld_vec(const T* p) {
  constexpr int B = sizeof(T) * VEC;
  Vec<T, VEC> r;
  if constexpr (B >= 16) {
#pragma unroll
    for (int i = 0; i < B / 16; ++i)
      reinterpret_cast<uint4*>(&r)[i] = reinterpret_cast<const uint4*>(p)[i];
  } else {
    r = *reinterpret_cast<const Vec<T, VEC>*>(p);
  }
  return r;
}
template <class T, int VEC>
__device__ __forceinline__ void st_vec(T* p, const Vec<T, VEC>& v) {
  constexpr int B = sizeof(T) * VEC;
  if constexpr (B >= 16) {
#pragma unroll
    for (int i = 0; i < B / 16; ++i)
      reinterpret_cast<uint4*>(p)[i] = reinterpret_cast<const uint4*>(&v)[i];
  } else {
    *reinterpret_cast<Vec<T, VEC>*>(p) = v;
  }
}

template <class... Ts>
inline constexpr int min_size_v = [] {
  std::size_t m = 16;
  ((m = sizeof(Ts) < m ? sizeof(Ts) : m), ...);
  return static_cast<int>(m);
}();

inline constexpr int kThreads = 256;
inline constexpr int kVecUnroll = 2;
inline constexpr int kStridedUnroll = 4;

template <int VEC, class T>
__device__ __forceinline__ Vec<T, VEC> splat(T x) {
  Vec<T, VEC> r;
#pragma unroll
  for (int j = 0; j < VEC; ++j) r.v[j] = x;
  return r;
}

// Inputs of one vector: for operand k, VEC values, loaded as a vector or, for
// a stride-0 operand (bcast bit k), as one value repeated.
template <int VEC, class T>
__device__ __forceinline__ Vec<T, VEC> load_operand(const char* base, std::int64_t off,
                                                    bool bcast) {
  if (bcast) return splat<VEC, T>(ld<T>(base, off));
  return ld_vec<T, VEC>(reinterpret_cast<const T*>(base) + off);
}

template <int VEC, class Out, class Op, class Tup, std::size_t... K>
__device__ __forceinline__ Vec<Out, VEC> apply_vec(const Op& op, const Tup& in,
                                                   std::index_sequence<K...>) {
  Vec<Out, VEC> r;
#pragma unroll
  for (int j = 0; j < VEC; ++j) r.v[j] = op(::cuda::std::get<K>(in).v[j]...);
  return r;
}

}  // namespace strata::cuda
