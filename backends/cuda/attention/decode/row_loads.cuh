#pragma once
// How a decode kernel's lane holds its slice of a head row (q, k or v): the
// element of each (lane, chunk, component) (lane_elem), the row's load
// widened to the compute type (load_row) or kept packed, two 2-byte elements
// per register (load_row_packed), and a packed word widened at its use
// (unpack2).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

// Element of a head row held by (lane, chunk q, component c). Vector layouts
// give each lane VEC adjacent elements; scalar ones interleave lanes so that
// unit-stride rows still coalesce.
__device__ __forceinline__ std::int64_t lane_elem(bool vec, int lane, int q, int c, int VEC) {
  return vec ? std::int64_t(lane + 32 * q) * VEC + c : std::int64_t(q * VEC + c) * 32 + lane;
}

// Loads the lane's slice of one head row of S into r (in T); elements past
// n, or all of them when !ok, are 0.
template <class T, class S, int CH>
__device__ __forceinline__ void load_row(T (&r)[CH * Vec<T>::n], const S* g, std::int64_t es,
                                         std::int64_t n, bool vec, bool ok, int lane) {
  using V = typename Vec<T>::type;
  constexpr int VEC = Vec<T>::n;
#pragma unroll
  for (int q = 0; q < CH; ++q) {
    if (vec && !std::is_same_v<S, T>) {
      // Narrow storage: one VEC * sizeof(S)-byte load, widened in registers.
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      using W = SVec<S, VEC>;
      if (ok && e0 < n) {
        const W w = *reinterpret_cast<const W*>(g + e0);
#pragma unroll
        for (int c = 0; c < VEC; ++c) r[q * VEC + c] = to_compute<T>(w.e[c]);
      } else {
#pragma unroll
        for (int c = 0; c < VEC; ++c) r[q * VEC + c] = T(0);
      }
    } else if (vec) {
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      const T* gt = reinterpret_cast<const T*>(g);  // S == T here
      V w;
      if (ok && e0 < n) {
        w = *reinterpret_cast<const V*>(gt + e0);
      } else {
        T* wp = reinterpret_cast<T*>(&w);
#pragma unroll
        for (int c = 0; c < VEC; ++c) wp[c] = 0;
      }
#pragma unroll
      for (int c = 0; c < VEC; ++c) r[q * VEC + c] = vget<T>(w, c);
    } else {
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const std::int64_t e = std::int64_t(q * VEC + c) * 32 + lane;
        r[q * VEC + c] = (ok && e < n) ? to_compute<T>(g[e * es]) : T(0);
      }
    }
  }
}

// Loads the lane's slice of one head row of 2-byte S into r, packed: word
// 2q + h holds elements (q, 2h) in its low and (q, 2h + 1) in its high half
// (the lane_elem order, as load_row widens them). Elements past n, or all of
// them when !ok, are 0. No register of r is read here: the loads of several
// rows stay in flight together until their first use.
template <class S, int CH>
__device__ __forceinline__ void load_row_packed(unsigned (&r)[CH * 2], const S* g, std::int64_t es,
                                                std::int64_t n, bool vec, bool ok, int lane) {
  static_assert(sizeof(S) == 2, "packed rows hold two 2-byte elements per register");
  constexpr int VEC = 4;
#pragma unroll
  for (int q = 0; q < CH; ++q) {
    if (vec) {
      const std::int64_t e0 = std::int64_t(lane + 32 * q) * VEC;
      uint2 w = make_uint2(0u, 0u);
      if (ok && e0 < n) w = *reinterpret_cast<const uint2*>(g + e0);
      r[2 * q] = w.x;
      r[2 * q + 1] = w.y;
    } else {
      const unsigned short* gs = reinterpret_cast<const unsigned short*>(g);
      unsigned h[VEC];
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        const std::int64_t e = std::int64_t(q * VEC + c) * 32 + lane;
        h[c] = (ok && e < n) ? unsigned(gs[e * es]) : 0u;
      }
      r[2 * q] = h[0] | (h[1] << 16);
      r[2 * q + 1] = h[2] | (h[3] << 16);
    }
  }
}

// The two elements of a packed word, widened to float (exact).
template <class S>
__device__ __forceinline__ float2 unpack2(unsigned w);
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(unsigned w) {
  return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u));
}
template <>
__device__ __forceinline__ float2 unpack2<__half>(unsigned w) {
  __half2 h;
  static_assert(sizeof(h) == sizeof(w), "__half2 is 4 bytes");
  memcpy(&h, &w, sizeof(w));
  return __half22float2(h);
}

}  // namespace strata::cuda
