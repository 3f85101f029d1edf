#pragma once
// bf16/f16 softmax attention on the tensor cores, FlashAttention-2 style
// (docs/log/cuda-tuning.md, "bf16/f16 on mma.sync"):
//
// - one CTA per (batch, q head, BM query rows); each warp owns 16 rows and
//   keeps its Q fragments, scores, probabilities and output accumulator in
//   registers;
// - K and V tiles of BN keys stream through shared memory with cp.async,
//   STAGES deep, in a layout whose 16-byte chunks are XOR-swizzled by row so
//   that ldmatrix (and ldmatrix.trans for V) reads without bank conflicts;
// - S = Q K^T and O += P V are mma.sync m16n8k16 with f32 accumulation; the
//   score accumulator is rounded to T in place and is the A operand of P V;
// - online softmax in base 2, scale * log2(e) folded into the scores; keys
//   outside the band are skipped tile by tile, tiles that cut the band, the
//   last partial tile and every tile under a mask are masked per element.
//
// Fully masked rows end with l = 0: out = 0, lse = -inf.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/common/flash_softmax.cuh"
#include "cuda/attention/common/flash_tile.cuh"

namespace strata::cuda::flash {

// MT row blocks of 16 per warp: with MT = 2 every K and V fragment read from
// shared memory feeds two mma instead of one (half the ldmatrix traffic per
// FLOP), for twice the accumulator registers.
template <int D, int BM, int MT>
struct Config {
  static constexpr int kWarps = BM / (16 * MT);
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kChunks = D / 8;  // 16-byte chunks per row
};

// Copies rows [0, rows) x chunks [0, cols / 8) of a [ROWS][D] tile from
// global (row stride rs elements) to shared; the rest of the tile is zeroed.
// A thread copies one chunk column every THREADS / (D / 8) rows (a multiple
// of 8, so its swizzle stays the same): one pointer, advanced by a stride.
template <class T, int D, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile(std::uint32_t dst, const T* src, std::int64_t rs,
                                          int rows, int cols, int tid) {
  constexpr int kChunks = D / 8;
  constexpr int kStep = THREADS / kChunks;
  static_assert(kStep % 8 == 0 && ROWS % kStep == 0, "tile rows must split evenly");
  const int c = tid % kChunks, r0 = tid / kChunks;
  const bool col_ok = c * 8 < cols;
  const T* p = src + r0 * rs + c * 8;
  const std::uint32_t d0 = dst + swz<D>(r0, c) * int(sizeof(T));
#pragma unroll
  for (int i = 0; i < ROWS / kStep; ++i) {
    const bool ok = col_ok && r0 + i * kStep < rows;
    cp_async16(d0 + i * kStep * D * int(sizeof(T)), ok ? p : src, ok ? 16 : 0);
    p += kStep * rs;
  }
}

template <class T, int D, int BM, int BN, int STAGES, int MT, bool QREG, int MINB>
__global__ void __launch_bounds__(Config<D, BM, MT>::kThreads, MINB)
    flash_mma_kernel(const FlashArgs a) {
  using C = Config<D, BM, MT>;
  using Mma = MmaType<T>;
  constexpr int kThreads = C::kThreads;
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + BM * D;
  T* sV = sK + STAGES * BN * D;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  const FlashTile<T> tile = flash_tile<T, BM>(a, blockIdx.x);
  const std::int64_t b = tile.b, h = tile.h, m0 = tile.m0;
  const int rows = tile.rows;
  const T *q = tile.q, *k = tile.k, *v = tile.v;

  const KeyTiles keys = band_key_tiles<BN>(a, m0, rows);  // the keys these rows can keep
  const std::int64_t t_begin = keys.begin, t_end = keys.end;

  const std::uint32_t sQ_u = smem_u32(sQ), sK_u = smem_u32(sK), sV_u = smem_u32(sV);
  auto load_kv = [&](std::int64_t t, int stage) {
    const std::int64_t n0 = t * BN;
    const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
    load_tile<T, D, BN, kThreads>(sK_u + stage * BN * D * int(sizeof(T)), k + n0 * a.k_ns, a.k_ns,
                                  nrows, a.d, tid);
    load_tile<T, D, BN, kThreads>(sV_u + stage * BN * D * int(sizeof(T)), v + n0 * a.v_ns, a.v_ns,
                                  nrows, a.dv, tid);
  };

  // Prologue: Q with the first tile, then STAGES - 2 more tiles.
  load_tile<T, D, BM, kThreads>(sQ_u, q, a.q_ms, rows, a.d, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (t_begin + s < t_end) load_kv(t_begin + s, s);
    cp_async_commit();
  }

  float o[MT][D / 8][4];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mi][n][e] = 0.f;
  float row_m[MT][2], row_l[MT][2];
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      row_m[mi][r] = kNegInf;
      row_l[mi][r] = 0.f;
    }
  // Q fragments: held for the whole loop (QREG), or read from sQ per chunk
  // of 16 columns, which frees MT * D / 4 registers for larger tiles.
  std::uint32_t qf[MT][QREG ? D / 16 : 1][4];

  const int wrow = warp * 16 * MT;  // this warp's first row in the tile
  auto load_q = [&](int mi, int kk, std::uint32_t* dst) {
    ldsm_x4(dst,
            sQ_u + swz<D>(wrow + 16 * mi + (lane & 15), 2 * kk + (lane >> 4)) * int(sizeof(T)));
  };

  // ldmatrix addresses. Every row a lane addresses has row & 7 == lane & 7,
  // and its chunk is 2 * kk plus a lane bit, so the swizzled chunk is
  // (2 * kk) ^ y for a per-lane y < 8: its low 3 bits take 4 values, one
  // offset each, and the high bits of 2 * kk add a constant (chunk_hi).
  constexpr int kRowBytes = D * int(sizeof(T));
  auto chunk_hi = [](int kk) { return ((2 * kk) & ~7) * 16; };
  std::uint32_t k_off[4], v_off[4];
  {
    const int x = lane & 7;
    const int yk = x ^ ((lane >> 3) & 1), yv = x ^ (lane >> 4);
    const int k_row = x + ((lane >> 4) << 3), v_row = x + (((lane >> 3) & 1) << 3);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      k_off[i] = k_row * kRowBytes + (((2 * i) ^ yk) << 4);
      v_off[i] = v_row * kRowBytes + (((2 * i) ^ yv) << 4);
    }
  }

  const HeadMask<T> mask = head_mask<T>(a, b, h);
  // This thread's rows: i0 + 16 * mi and i0 + 16 * mi + 8.
  const std::int64_t i0 = m0 + wrow + g;

  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const int it = int(t - t_begin);
    const int stage = it % STAGES;
    if (t + STAGES - 1 < t_end) load_kv(t + STAGES - 1, (it + STAGES - 1) % STAGES);
    cp_async_commit();
    cp_async_wait<STAGES - 1>();
    __syncthreads();

    if (QREG && it == 0) {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) load_q(mi, kk, qf[mi][QREG ? kk : 0]);
    }

    // S = Q K^T for this warp's rows and BN keys.
    float s[MT][BN / 8][4];
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][j][e] = 0.f;
    const std::uint32_t kst = sK_u + stage * BN * D * int(sizeof(T));
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if (!QREG) {
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) load_q(mi, kk, qf[mi][0]);
      }
      const int qk = QREG ? kk : 0;
#pragma unroll
      for (int jp = 0; jp < BN / 16; ++jp) {
        std::uint32_t bf[4];
        ldsm_x4(bf, kst + k_off[kk & 3] + chunk_hi(kk) + jp * 16 * kRowBytes);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          Mma::mma(s[mi][2 * jp], qf[mi][qk], bf[0], bf[1]);
          Mma::mma(s[mi][2 * jp + 1], qf[mi][qk], bf[2], bf[3]);
        }
      }
    }

    // Scores to base 2 (c = scale * log2(e)); masks where the tile needs
    // them. (Keeping unmasked tiles' scores raw and folding c into the exp2
    // FFMA cost registers and ran slower: docs/log/cuda-tuning.md, "bf16/f16
    // on mma.sync".)
    const std::int64_t n0 = t * BN;
    const bool inside_band =
        !a.has_band || (n0 >= m0 + BM - 1 + a.band_lo && n0 + BN - 1 <= m0 + a.band_hi);
    const bool need_mask = a.mask_kind != 0 || n0 + BN > a.N || !inside_band;
    const float c = a.scale_log2;
#pragma unroll
    for (int mi = 0; mi < MT; ++mi)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mi][j][e] *= c;
    if (need_mask) {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            s[mi][j][e] = masked_score(a, mask, i0 + 16 * mi + (e >> 1) * 8,
                                       n0 + j * 8 + 2 * t4 + (e & 1), s[mi][j][e]);
          }
        }
      }
    }

    // Online softmax for rows g (r = 0) and g + 8 (r = 1) of each block, in
    // base 2.
    float alpha[MT][2];
    bool rescale = false;
#pragma unroll
    for (int mi = 0; mi < MT; ++mi) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = kNegInf;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
          mx = fmaxf(mx, fmaxf(s[mi][j][2 * r], s[mi][j][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        mx = fmaxf(mx, row_m[mi][r]);
        const float m_use = mx == kNegInf ? 0.f : mx;  // a row with nothing kept yet
        alpha[mi][r] = ex2(row_m[mi][r] - m_use);
        rescale = rescale || alpha[mi][r] != 1.f;
        row_m[mi][r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          s[mi][j][2 * r] = ex2(s[mi][j][2 * r] - m_use);
          s[mi][j][2 * r + 1] = ex2(s[mi][j][2 * r + 1] - m_use);
          sum += s[mi][j][2 * r] + s[mi][j][2 * r + 1];
        }
        row_l[mi][r] = row_l[mi][r] * alpha[mi][r] + sum;
      }
    }
    // Once the row maxima settle, alpha is exactly 1: skip the rescale when
    // it is for every row of the warp.
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int mi = 0; mi < MT; ++mi)
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          o[mi][n][0] *= alpha[mi][0];
          o[mi][n][1] *= alpha[mi][0];
          o[mi][n][2] *= alpha[mi][1];
          o[mi][n][3] *= alpha[mi][1];
        }
    }

    // O += P V: the score accumulator, rounded to T, is the A operand.
    const std::uint32_t vst = sV_u + stage * BN * D * int(sizeof(T));
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      std::uint32_t pf[MT][4];
#pragma unroll
      for (int mi = 0; mi < MT; ++mi) {
        pf[mi][0] = Mma::pack(s[mi][2 * kk][0], s[mi][2 * kk][1]);
        pf[mi][1] = Mma::pack(s[mi][2 * kk][2], s[mi][2 * kk][3]);
        pf[mi][2] = Mma::pack(s[mi][2 * kk + 1][0], s[mi][2 * kk + 1][1]);
        pf[mi][3] = Mma::pack(s[mi][2 * kk + 1][2], s[mi][2 * kk + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t bf[4];
        ldsm_x4_trans(bf, vst + v_off[np & 3] + chunk_hi(np) + kk * 16 * kRowBytes);
#pragma unroll
        for (int mi = 0; mi < MT; ++mi) {
          Mma::mma(o[mi][2 * np], pf[mi], bf[0], bf[1]);
          Mma::mma(o[mi][2 * np + 1], pf[mi], bf[2], bf[3]);
        }
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's load
  }
  cp_async_wait<0>();
  __syncthreads();

  // Finish the rows: full row sums, out = o / l (0 when nothing was kept).
  float inv[MT][2];
  float* lse = flash_lse(a, b, h);
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
    finish_rows(a, lse, i0 + 16 * mi, row_m[mi], row_l[mi], inv[mi], t4);

    // Stage the rounded output in this warp's rows of sQ, then store whole
    // rows: 16-byte vectors where the layout allows, elements otherwise.
#pragma unroll
  for (int mi = 0; mi < MT; ++mi)
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = wrow + 16 * mi + g + 8 * r;
        *reinterpret_cast<std::uint32_t*>(sQ + swz<D>(row, n) + 2 * t4) =
            Mma::pack(o[mi][n][2 * r] * inv[mi][r], o[mi][n][2 * r + 1] * inv[mi][r]);
      }
  __syncthreads();
  T* out = static_cast<T*>(a.out) + batch_off(a, b, a.o_bs) + h * a.o_hs + m0 * a.o_ms;
  for (int i = tid; i < BM * C::kChunks; i += kThreads) {
    const int r = i / C::kChunks, c = i % C::kChunks;
    if (r >= rows || c * 8 >= a.dv) continue;
    const T* src = sQ + swz<D>(r, c);
    T* dst = out + r * a.o_ms + c * 8 * a.o_ds;
    if (a.o_vec) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int e = 0; e < 8 && c * 8 + e < a.dv; ++e) dst[e * a.o_ds] = src[e];
    }
  }
}

}  // namespace strata::cuda::flash
