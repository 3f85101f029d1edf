#pragma once
// bf16/f16 softmax attention on Hopper's warpgroup MMA (wgmma, sm_90a), the
// FlashAttention-2 algorithm with FlashAttention-3's instructions
// (docs/log/cuda-tuning.md, "bf16/f16 on wgmma"):
//
// - one CTA per (batch, q head, 64 * WG query rows); each warpgroup (4
//   warps) owns 64 rows; its scores, probabilities and output accumulator
//   stay in registers;
// - Q, and K and V tiles of BN keys (two slots each, cp.async), sit in shared
//   memory as 64-column panels of 128-byte rows, 128-byte swizzled: the
//   layout wgmma reads directly, K-major for Q and K, MN-major (transposed
//   by the instruction) for V;
// - S = Q K^T is wgmma with both operands in shared memory; O += P V takes P
//   from the score registers rounded to T (the accumulator layout is the A
//   fragment layout, as in the mma.sync kernel);
// - the P V of tile i and the S of tile i + 1 are in flight together, the
//   softmax of tile i + 1 between their waits (FlashAttention-3's
//   in-warpgroup overlap);
// - online softmax in base 2 as in sm80/kernel_16bit.cuh, whose argument struct
//   (FlashArgs) this kernel shares; bounds and bands masked in 32 bits;
// - split-KV for grids too small to fill the GPU (FlashArgs::splits): the
//   key tiles of a tile of rows are cut into parts, one CTA each, which
//   write unnormalised partials for the merge kernel (common/split_merge.cuh).
//
// Fully masked rows end with l = 0: out = 0, lse = -inf.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/common/flash_softmax.cuh"
#include "cuda/attention/common/flash_tile.cuh"
#include "cuda/attention/sm90/panels.cuh"
#include "cuda/attention/sm90/softmax.cuh"
#include "cuda/attention/sm90/wgmma_ops.cuh"

namespace strata::cuda::flash {

// KQ: the k-steps (16 columns each) of S = Q K^T, D / 16 but for the
// configurations that serve smaller head dims (d <= 16 KQ): d 100 on the d 128
// kernel with KQ 7 computes 7 k-steps of S per tile instead of 8.
// NV: the value columns P V computes and O keeps (dv <= NV), D but for the
// configurations of smaller value head dims: each whole 64-column panel of
// V takes one N = 64 wgmma, the rest one N = NV % 64 wgmma starting at the
// next panel's base (MN-major operands are laid out in whole panels, but an
// instruction may read a part of one). d 100 with NV 104 keeps 52
// accumulators per thread instead of 64 and issues 64 + 40 columns per
// k-step of P V instead of 128.
//
// Diagonal half tiles (FlashArgs::diag_half, STRATA_FLASH_DIAG_HALF; only
// the d 64 64x128 tiles, kHalf below): a tile whose keys [64, 128) are
// masked for all 64 rows (the band's upper edge or N cuts it there) takes
// S over its first 64 keys (m64n64k16: an N = 128 accumulator's first 32
// registers are the N = 64 one's, sm90/wgmma_ops.cuh) and 4 of the 8 k-steps of
// P V; the masked keys' probabilities would be exactly 0. Under causal
// attention every other 64-row tile ends on such a tile. Only the last key
// tile of a tile of rows can be one (the band ends before its upper half,
// so a next tile would start past its last key): it is peeled as the last tile
// already is, and the loop keeps no branch around an issue
// (docs/log/cuda-tuning.md, "Diagonal half tiles").
template <class T, int D, int WG, int BN, int MINB, bool RAW, bool P8, int KQ = D / 16, int NV = D>
__global__ void __launch_bounds__(128 * WG, MINB) flash_wgmma_kernel(const FlashArgs a) {
  static_assert(KQ > 0 && KQ <= D / 16, "KQ: k-steps of S within the tile's D columns");
  static_assert(NV > 0 && NV <= D && NV % 8 == 0, "NV: whole 8-column blocks within D");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgmmaConfig<T, D, WG, BN>;
  constexpr int STAGES = C::kSlots;
  using Mma = MmaType<T>;
  constexpr int BM = C::kBM, kThreads = C::kThreads;
  constexpr int kTileBytes = BN * D * int(sizeof(T));
  const float kNegInf = -__int_as_float(0x7f800000);
  constexpr bool kHalf = D == 64 && WG == 1 && BN == 128;
  using Full = std::false_type;
  using Half = std::true_type;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const std::uint32_t raw_u = smem_u32(smem_raw);
  const std::uint32_t sQ_u = (raw_u + 1023u) & ~1023u;
  const std::uint32_t sK_u = sQ_u + BM * D * int(sizeof(T));
  const std::uint32_t sV_u = sK_u + STAGES * kTileBytes;
  T* sQ = reinterpret_cast<T*>(smem_raw + (sQ_u - raw_u));

  const int tid = threadIdx.x, wg = tid >> 7, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int wrow = wg * 64 + ((tid & 127) >> 5) * 16;  // this warp's first row

  // Block order: the splits of a tile of rows innermost, then the tiles of
  // rows and (batch, head) as flash_block_tile orders them.
  std::int64_t bid = blockIdx.x;
  const int split = a.splits > 1 ? int(bid % a.splits) : 0;
  if (a.splits > 1) bid /= a.splits;
  const FlashTile<T> tile = flash_tile<T, BM>(a, bid);
  const std::int64_t bh = tile.bh, b = tile.b, h = tile.h, m0 = tile.m0;
  const int rows = tile.rows;
  const T *q = tile.q, *k = tile.k, *v = tile.v;

  const KeyTiles keys = band_key_tiles<BN>(a, m0, rows);  // the keys these rows can keep
  std::int64_t t_begin = keys.begin, t_end = keys.end;
  if (a.splits > 1) {  // this CTA's share of the rows' key tiles (possibly none)
    const std::int64_t per = (t_end - t_begin + a.splits - 1) / a.splits;
    const std::int64_t lo = t_begin + split * per;
    t_begin = lo < t_end ? lo : t_end;
    t_end = t_begin + per < t_end ? t_begin + per : t_end;
  }

  const int n_tiles = int(t_end - t_begin);
  // Whether keys [BN / 2, BN) of the last tile are masked for every row of
  // the tile (rows past M are masked whole): past N, or past the band's
  // upper edge of the last row. Split-KV: only the last split ends on that
  // tile. Evaluated where needed rather than kept in a register through the
  // loop (at 255 registers, a live flag took the kernel from 12 to 20-48
  // bytes of spill, or made ptxas serialize the wgmma).
  auto half_last = [&] {
    const std::int64_t upper = (t_begin + n_tiles) * BN - BN / 2;
    return a.diag_half && n_tiles > 0 &&
           (upper >= a.N || (a.has_band && upper > m0 + rows - 1 + a.band_hi));
  };

  // K and V of tile `it` (counted from t_begin) go to slot it % STAGES.
  auto load_k = [&](int it) {
    const std::int64_t n0 = (t_begin + it) * BN;
    if (it >= n_tiles) return;
    const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
    load_panels<T, D, BN, kThreads, P8, 16 * KQ>(sK_u + (it % STAGES) * kTileBytes, k + n0 * a.k_ns,
                                                 a.k_ns, nrows, a.d, tid);
  };
  auto load_v = [&](int it) {
    const std::int64_t n0 = (t_begin + it) * BN;
    if (it >= n_tiles) return;
    const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
    load_panels<T, D, BN, kThreads, P8, NV>(sV_u + (it % STAGES) * kTileBytes, v + n0 * a.v_ns,
                                            a.v_ns, nrows, a.dv, tid);
  };

  float o[NV / 2], s[BN / 2];
  std::uint32_t pf[BN / 16][4];
#pragma unroll
  for (int i = 0; i < NV / 2; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
  float row_m[2] = {kNegInf, kNegInf}, row_l[2] = {0.f, 0.f};

  // Descriptors: Q rows of this warpgroup and K are K-major (a k-step of 16
  // columns is 32 bytes into the row, a panel every 4 steps); V is MN-major,
  // its 64-column panels BN * 128 bytes apart, a k-step 16 rows (2048 bytes).
  const std::uint64_t q_desc = wgmma::desc_sw128(sQ_u + wg * 64 * 128, 16, 1024);
  const std::uint64_t k_desc = wgmma::desc_sw128(sK_u, 16, 1024);
  const std::uint64_t v_desc = wgmma::desc_sw128(sV_u, BN * 128, 1024);
  auto step_qk = [](int kk, int panel_rows) {
    return std::uint64_t(((kk >> 2) * panel_rows * 128 + (kk & 3) * 32) >> 4);
  };
  // S = Q K^T (64 rows of this warpgroup x BN keys of tile it, or the
  // first BN / 2 keys for a Half tile), issued.
  auto issue_s = [&](int it, auto half) {
    constexpr int kN = decltype(half)::value ? BN / 2 : BN;
    const std::uint64_t kst = k_desc + std::uint64_t(((it % STAGES) * kTileBytes) >> 4);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk)
      wgmma::Wgmma<kN, T>::ss(s, q_desc + step_qk(kk, BM), kst + step_qk(kk, BN), kk > 0);
    wgmma::commit();
  };
  // O += P V over tile it, P from pf, issued: all D columns in one
  // instruction per k-step, or NV's panels (o holds 32 accumulators per
  // whole panel) one instruction each; a Half tile's first BN / 2 keys only.
  auto issue_pv = [&](int it, auto half) {
    constexpr int kSteps = decltype(half)::value ? BN / 32 : BN / 16;
    const std::uint64_t vst = v_desc + std::uint64_t(((it % STAGES) * kTileBytes) >> 4);
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      const std::uint64_t vk = vst + std::uint64_t((kk * 16 * 128) >> 4);
      if constexpr (NV == D) {
        wgmma::Wgmma<D, T>::rs(o, pf[kk], vk, 1);
      } else {
#pragma unroll
        for (int p = 0; p < NV / 64; ++p)
          wgmma::Wgmma<64, T>::rs(o + 32 * p, pf[kk], vk + std::uint64_t((p * BN * 128) >> 4), 1);
        if constexpr (NV % 64 != 0)
          wgmma::Wgmma<NV % 64, T>::rs(o + 32 * (NV / 64), pf[kk],
                                       vk + std::uint64_t(((NV / 64) * BN * 128) >> 4), 1);
      }
    }
    wgmma::commit();
  };

  const HeadMask<T> mask = head_mask<T>(a, b, h);
  const std::int64_t i0 = m0 + wrow + g;  // this thread's rows: i0 and i0 + 8

  // The scores of tile it (complete in s) to probabilities, in base 2:
  // scale, masks where the tile needs them, online softmax for rows g
  // (r = 0) and g + 8 (r = 1). alpha: the factor O must take; returns
  // whether any of this warp's alphas is not 1. A Half tile: its first
  // BN / 2 keys only (s[0, BN / 4)); the others are masked, and their
  // probabilities, 0, would change neither the max nor the sums.
  auto softmax = [&](int it, float* alpha, auto half) {
    constexpr int W = decltype(half)::value ? BN / 2 : BN;  // columns of s
    const std::int64_t n0 = (t_begin + it) * BN;
    const bool inside_band =
        !a.has_band || (n0 >= m0 + BM - 1 + a.band_lo && n0 + BN - 1 <= m0 + a.band_hi);
    const bool need_mask = a.mask_kind != 0 || n0 + BN > a.N || !inside_band;
    // Unmasked tiles keep raw scores: the max is taken raw (c > 0) and c
    // goes into the exp2's FFMA, one instruction per score fewer.
    const float c = a.scale_log2;
    const float f = need_mask || !RAW ? 1.f : c;
    if (need_mask || !RAW) {
#pragma unroll
      for (int i = 0; i < W / 2; ++i) s[i] *= c;
    }
    if (need_mask && a.mask_kind == 0) {
      mask_bounds_band<W>(a, s, n0, i0, t4);  // causal, windows, partial tiles
    } else if (need_mask) {
#pragma unroll
      for (int j = 0; j < W / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[4 * j + e] =
              masked_score(a, mask, i0 + (e >> 1) * 8, n0 + j * 8 + 2 * t4 + (e & 1), s[4 * j + e]);
        }
      }
    }
    return online_softmax_tile<W, true>(s, row_m, row_l, alpha, f);
  };
  // Once the row maxima settle, alpha is exactly 1 for the whole warp.
  auto rescale = [&](const float* alpha) {
#pragma unroll
    for (int n = 0; n < NV / 8; ++n) {
      o[4 * n + 0] *= alpha[0];
      o[4 * n + 1] *= alpha[0];
      o[4 * n + 2] *= alpha[1];
      o[4 * n + 3] *= alpha[1];
    }
  };
  // P (the A fragment of P V) = the probabilities rounded to T (a Half
  // tile's first BN / 2 keys).
  auto pack_p = [&](auto half) {
    constexpr int kSteps = decltype(half)::value ? BN / 32 : BN / 16;
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
      pf[kk][0] = Mma::pack(s[8 * kk + 0], s[8 * kk + 1]);
      pf[kk][1] = Mma::pack(s[8 * kk + 2], s[8 * kk + 3]);
      pf[kk][2] = Mma::pack(s[8 * kk + 4], s[8 * kk + 5]);
      pf[kk][3] = Mma::pack(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };
  // cp.async writes reach wgmma (the async proxy) through the fence and a barrier.
  auto landed = [] {
    wgmma::fence_proxy_async();
    __syncthreads();
  };

  load_panels<T, D, BM, kThreads, P8, 16 * KQ>(sQ_u, q, a.q_ms, rows, a.d, tid);
  // FlashAttention-3's in-warpgroup overlap: while the tensor cores run
  // P V of tile it, the softmax of tile it + 1 (whose S was issued just
  // before) runs on the other units. K runs one tile ahead of V: the
  // group committed after iteration it holds K of it + 3 and V of it + 2,
  // so every load has a whole iteration to land.
  load_k(0);
  cp_async_commit();  // Q, K0
  load_k(1);
  load_v(0);
  cp_async_commit();  // K1, V0
  cp_async_wait<1>();
  landed();
  if constexpr (kHalf) {
    // The pipeline below with a Half last tile peeled (its own S in the
    // prologue or in a last iteration of its own, its own P V); the other
    // configurations keep the plain one, whose PTX this leaves unchanged.
    auto first = [&](auto half) {  // the first tile's S and softmax (O is still 0)
      issue_s(0, half);
      wgmma::wait<0>();
      wgmma::touch_regs<(decltype(half)::value ? BN / 4 : BN / 2)>(s);
      float alpha[2];
      (void)softmax(0, alpha, half);
      pack_p(half);
    };
    auto step = [&](int it, auto half) {  // half: tile it + 1 is a Half tile
      cp_async_wait<1>();                 // K of it + 1, V of it
      landed();
      issue_s(it + 1, half);
      issue_pv(it, Full{});
      wgmma::wait<1>();
      wgmma::touch_regs<(decltype(half)::value ? BN / 4 : BN / 2)>(s);
      float alpha[2];
      const bool moved = softmax(it + 1, alpha, half);
      wgmma::wait<0>();
      wgmma::touch_regs<NV / 2>(o);
      if (moved) rescale(alpha);
      pack_p(half);
      __syncthreads();  // K slot of it + 1 and V slot of it are free
      load_k(it + 3);
      load_v(it + 2);
      cp_async_commit();
    };
    auto last = [&](auto half) {  // the last tile's P V
      issue_pv(n_tiles - 1, half);
      wgmma::wait<0>();
      wgmma::touch_regs<NV / 2>(o);
    };
    if (half_last() && n_tiles == 1)
      first(Half{});
    else if (n_tiles > 0)
      first(Full{});
    __syncthreads();  // K slot 0 is free
    load_k(2);
    load_v(1);
    cp_async_commit();
    const int full_tiles = n_tiles - (half_last() ? 1 : 0);
    for (int it = 0; it + 1 < full_tiles; ++it) step(it, Full{});
    if (half_last() && n_tiles > 1) step(n_tiles - 2, Half{});
    if (n_tiles > 0) {
      cp_async_wait<1>();
      landed();
      if (half_last())
        last(Half{});
      else
        last(Full{});
    }
  } else {
    if (n_tiles > 0) {
      issue_s(0, Full{});
      wgmma::wait<0>();
      wgmma::touch_regs<BN / 2>(s);
      float alpha[2];
      (void)softmax(0, alpha, Full{});  // O is still 0
      pack_p(Full{});
    }
    __syncthreads();  // K slot 0 is free
    load_k(2);
    load_v(1);
    cp_async_commit();
    // Every iteration but the last has a next tile (no branch around an
    // issue: ptxas serializes wgmma across such branches).
    for (int it = 0; it + 1 < n_tiles; ++it) {
      cp_async_wait<1>();  // K of it + 1, V of it
      landed();
      issue_s(it + 1, Full{});
      issue_pv(it, Full{});
      wgmma::wait<1>();
      wgmma::touch_regs<BN / 2>(s);
      float alpha[2];
      const bool moved = softmax(it + 1, alpha, Full{});
      wgmma::wait<0>();
      wgmma::touch_regs<NV / 2>(o);
      if (moved) rescale(alpha);
      pack_p(Full{});
      __syncthreads();  // K slot of it + 1 and V slot of it are free
      load_k(it + 3);
      load_v(it + 2);
      cp_async_commit();
    }
    if (n_tiles > 0) {
      cp_async_wait<1>();
      landed();
      issue_pv(n_tiles - 1, Full{});
      wgmma::wait<0>();
      wgmma::touch_regs<NV / 2>(o);
    }
  }
  cp_async_wait<0>();
  __syncthreads();

  if (a.splits > 1) {
    // Split-KV: the unnormalised o, the row max (base 2) and the row sum of
    // this CTA's keys, for the merge (FlashArgs::part_acc / part_ml).
    const std::int64_t base = split * a.part_rows + bh * a.M;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_l[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const std::int64_t row = i0 + 8 * r;
      if (row >= a.M) continue;
      if (t4 == 0) {
        a.part_ml[2 * (base + row)] = row_m[r];
        a.part_ml[2 * (base + row) + 1] = l;
      }
      float* acc = a.part_acc + (base + row) * a.dv;
#pragma unroll
      for (int n = 0; n < NV / 8; ++n) {
        const int col = n * 8 + 2 * t4;
        if ((a.dv & 1) == 0 && col + 1 < a.dv) {
          *reinterpret_cast<float2*>(acc + col) =
              make_float2(o[4 * n + 2 * r], o[4 * n + 2 * r + 1]);
        } else {
          if (col < a.dv) acc[col] = o[4 * n + 2 * r];
          if (col + 1 < a.dv) acc[col + 1] = o[4 * n + 2 * r + 1];
        }
      }
    }
    return;
  }

  // Finish the rows: full row sums, out = o / l (0 when nothing was kept).
  float inv[2];
  finish_rows(a, flash_lse(a, b, h), i0, row_m, row_l, inv, t4);

  // Stage the rounded output row-major (swizzled) over sQ, then store whole
  // rows: 16-byte vectors where the layout allows, elements otherwise.
  // swz<D> flips a chunk index's low 3 bits: it stays inside the row only
  // when the D / 8 chunks are whole groups of 8 (64, 128, 192, 256).
  static_assert((D / 8) % 8 == 0, "swz<D> needs D / 8 a multiple of 8");
#pragma unroll
  for (int n = 0; n < NV / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = wrow + g + 8 * r;
      *reinterpret_cast<std::uint32_t*>(sQ + swz<D>(row, n) + 2 * t4) =
          Mma::pack(o[4 * n + 2 * r] * inv[r], o[4 * n + 2 * r + 1] * inv[r]);
    }
  __syncthreads();
  T* out = static_cast<T*>(a.out) + batch_off(a, b, a.o_bs) + h * a.o_hs + m0 * a.o_ms;
  constexpr int kChunks = NV / 8;  // the chunks of out's rows dv <= NV can reach
  for (int i = tid; i < BM * kChunks; i += kThreads) {
    const int r = i / kChunks, cc = i % kChunks;
    if (r >= rows || cc * 8 >= a.dv) continue;
    const T* src = sQ + swz<D>(r, cc);
    T* dst = out + r * a.o_ms + cc * 8 * a.o_ds;
    if (a.o_vec) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else {
      for (int e = 0; e < 8 && cc * 8 + e < a.dv; ++e) dst[e * a.o_ds] = src[e];
    }
  }
#else
  (void)a;  // built without sm_90a: never launched (the registry offers it only with
            // STRATA_CUDA_WGMMA)
#endif
}

}  // namespace strata::cuda::flash
