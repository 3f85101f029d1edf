#pragma once
// The shared pieces of the backward's two main kernels for bf16/f16 on the
// tensor cores (mma.sync m16n8k16, f32 accumulation), head dims up to D (64
// or 128): mma_dkdv.cuh and mma_dq.cuh.
// q, k, v and dout are read in 16-byte chunks (unit last-dim stride, rows a
// multiple of 8 elements, 16-byte aligned: the launcher packs other layouts
// first); the mask and the gradients through their strides. The shared
// memory tiles are [rows][D] with XOR-swizzled 16-byte chunks and ldmatrix
// reads, as in the forward (sm80/kernel_16bit.cuh, whose load_tile this
// reuses).
//
// Scores are in base 2: x = scale log2(e) q.k (+ log2(e) float mask), and
// P = 2^(x - L) with L = log2(e) lse from preprocess.cuh (+inf where a row
// kept nothing or is padding: P = 0 there). dS = P (dP - Dw).
// Each gradient element is summed by one thread in a fixed order: no
// atomics, the same bits run to run.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"
#include "cuda/attention/backward/kernel_common.cuh"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/sm80/kernel_16bit.cuh"

namespace strata::cuda::bwd {

using flash::cp_async16;
using flash::cp_async_commit;
using flash::cp_async_wait;
using flash::ex2;
using flash::ldsm_x4;
using flash::ldsm_x4_trans;
using flash::load_tile;
using flash::smem_u32;
using flash::swz;

inline constexpr float kLog2e = 1.4426950408889634f;

// ldmatrix addresses (bytes from a tile's base) of one lane, for a [rows][D]
// tile of 16-bit elements:
// - a_frag: the A fragment of rows r0..r0+15, k columns 16 kk..16 kk+15;
// - b_frag: two B fragments (n-tiles n0..n0+7, n0+8..n0+15) of a tile
//   stored [n][k] (non-transposed), k columns 16 kk..;
// - bt_frag: two B fragments (n columns 16 np.., then 16 np + 8..) of a tile
//   stored [k][n] (read transposed), k rows k0..k0+15.
template <int D>
__device__ __forceinline__ std::uint32_t a_frag(int lane, int r0, int kk) {
  return swz<D>(r0 + (lane & 15), 2 * kk + (lane >> 4)) * 2;
}
template <int D>
__device__ __forceinline__ std::uint32_t b_frag(int lane, int n0, int kk) {
  return swz<D>(n0 + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)) * 2;
}
template <int D>
__device__ __forceinline__ std::uint32_t bt_frag(int lane, int k0, int np) {
  return swz<D>(k0 + (lane & 7) + (((lane >> 3) & 1) << 3), 2 * np + (lane >> 4)) * 2;
}

// The same addresses with the swizzle worked out once per lane: every row a
// lane addresses has row & 7 == lane & 7 and chunk 2 c + (a lane bit), so the
// swizzled chunk's low 3 bits take 4 values (c mod 4) and the rest is
// 2 c & ~7. at(r, c): the fragment(s) of rows r.. (a multiple of 16) and
// chunk pair c; kind 0 as b_frag, 1 as bt_frag, 2 as a_frag.
template <int D>
struct FragOff {
  std::uint32_t o[4];
  __device__ __forceinline__ FragOff(int lane, int kind) {
    const int x = lane & 7;
    const int row = kind == 0   ? x + ((lane >> 4) << 3)
                    : kind == 1 ? x + (((lane >> 3) & 1) << 3)
                                : lane & 15;
    const int bit = kind == 0 ? (lane >> 3) & 1 : lane >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) o[i] = std::uint32_t(row * D * 2 + (((2 * i + bit) ^ x) << 4));
  }
  __device__ __forceinline__ std::uint32_t at(int r, int c) const {
    return std::uint32_t(r * D * 2 + ((2 * c) & ~7) * 16) + o[c & 3];
  }
};

// One score (base 2) of query i, key j under the band and mask, -inf where
// the key is dropped. mb / mf: the (batch, head)'s bool or float mask.
template <class T>
__device__ __forceinline__ float masked(const AttentionArgs& a, const unsigned char* mb,
                                        const T* mf, std::int64_t i, std::int64_t j, float x) {
  bool keep = i < a.M && j < a.N && j >= i + a.band_lo && j <= i + a.band_hi;
  const std::int64_t off = i * attn::row_stride(a.mask) + j * attn::col_stride(a.mask);
  if (keep && mb) keep = mb[off] != 0;
  if (keep && mf) x += static_cast<float>(mf[off]) * kLog2e;
  return keep ? x : -__int_as_float(0x7f800000);
}

// Zeroes a warp's accumulator tiles acc[MT][NJ][4].
template <int MT, int NJ>
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NJ][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][j][e] = 0.f;
}

// One k-step of 16 over 16 columns for each of a warp's MT m-tiles:
// acc[mt][2 jp] and acc[mt][2 jp + 1] += a[mt] B, where a[mt] is m-tile
// mt's A fragment and bf the two 8-column B fragments (one ldmatrix x4).
template <class Mma, int MT, int NJ>
__device__ __forceinline__ void mma_n16(float (&acc)[MT][NJ][4], int jp,
                                        const std::uint32_t (&a)[MT][4],
                                        const std::uint32_t (&bf)[4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    Mma::mma(acc[mt][2 * jp], a[mt], bf[0], bf[1]);
    Mma::mma(acc[mt][2 * jp + 1], a[mt], bf[2], bf[3]);
  }
}

// The A fragment of k-step kk taken from one m-tile's accumulators (its
// n-tiles 2 kk and 2 kk + 1, rounded to T): P or dS as the left operand of
// the next product, straight from the registers.
template <class Mma, int NJ>
__device__ __forceinline__ void acc_to_a(std::uint32_t (&a)[4], const float (&acc)[NJ][4], int kk) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float* x = acc[2 * kk + (i >> 1)];
    a[i] = Mma::pack(x[2 * (i & 1)], x[2 * (i & 1) + 1]);
  }
}

// Stores a warp's [16][D] accumulator (rows r0 + g, r0 + g + 8 of the
// fragment layout) times mul into dst (rows below `rows`, columns below
// `cols`).
template <class T, int D>
__device__ __forceinline__ void store_acc(T* dst, std::int64_t rs, std::int64_t cs,
                                          const float (*acc)[4], std::int64_t r0, std::int64_t rows,
                                          int cols, float mul, int lane) {
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t r = r0 + g + 8 * (e >> 1);
      const int c = 8 * n + 2 * t4 + (e & 1);
      if (r < rows && c < cols) dst[r * rs + c * cs] = T(acc[n][e] * mul);
    }
}

}  // namespace strata::cuda::bwd
