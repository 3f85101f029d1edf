#pragma once
// f32 softmax attention on Hopper's warpgroup MMA (wgmma, sm_90a) with TF32
// operands: medium (X3 = false) one wgmma per product, high (X3 = true)
// 3xTF32. The bf16 wgmma kernel's structure (sm90/kernel_16bit.cuh) carried to
// 32-bit elements (docs/log/cuda-tuning.md, "bf16/f16 on wgmma" and "f32 on the
// tensor cores: TF32 and 3xTF32"):
//
// - one CTA per (batch, q head, 64 * WG query rows); each warpgroup owns 64
//   rows; scores, P and the output accumulator stay in registers;
// - Q, and K tiles of BN keys (two slots), sit in shared memory as 32-float
//   panels of 128-byte rows, 128-byte swizzled: a TF32 k-step (8 floats) is
//   the same 32 bytes as a bf16 one, so the descriptors are the bf16
//   kernel's. cp.async fills them; each thread then rounds the chunks it
//   copied in place (cvt.rna) and, for high, writes their small parts
//   (tf32(x - big)) to a second panel set: no barrier, a thread reads only
//   what it copied;
// - .tf32 wgmma reads B only K-major, so V is stored transposed
//   ([d][keys], keys contiguous): each thread copies its V chunks (16 keys
//   x 8 columns per warp: one 32-byte sector per key row) into a staging
//   tile with cp.async a tile ahead, then stores them transposed, rounded
//   (and split) while the tensor cores run the previous tile; 16 keys x 2
//   rows per store hit 32 different banks. VREG instead loads them into
//   registers and stores them into a single V^T slot after every
//   warpgroup's P V (a second barrier per tile), which saves two tiles of
//   shared memory (high's d 128 with two warpgroups needs that);
// - S = Q K^T with both operands in shared memory (SS); O += P V with P from
//   the score registers (RS). The S accumulator gives lane (g, t) keys 2t
//   and 2t + 1 of each 8; the TF32 A fragment wants (g, t) and (g, t + 4):
//   A's k = t is taken as key 2t and k = t + 4 as key 2t + 1, and V's
//   transposed rows hold each 8 keys in that order (0 2 4 6 1 3 5 7), so no
//   shuffle is needed (as sm80/kernel_tf32.cuh does with mma.sync);
// - high: a*b ~ a_small*b_big + a_big*b_small + a_big*b_big. The tensor
//   core truncates each accumulation, so the small terms of the whole
//   product go first (their sums are ~2^-11 of the result: their
//   truncations cost nothing) and the big products last: S takes D / 8
//   significant truncations, not 3 D / 8. P V goes into a zeroed
//   accumulator per key tile that is added to O in f32 (the long chain over
//   all keys would otherwise truncate N / 8 times);
// - the P V of tile i and the S of tile i + 1 in flight together, the
//   softmax of tile i + 1 between their waits (FlashAttention-3's
//   in-warpgroup overlap); one barrier per tile (two with VREG).
//
// Masking, bands, lse and empty rows as in sm90/kernel_16bit.cuh: fully masked
// rows end with l = 0, out = 0, lse = -inf.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/common/flash_softmax.cuh"
#include "cuda/attention/common/flash_tile.cuh"
#include "cuda/attention/sm90/panels.cuh"
#include "cuda/attention/sm90/softmax.cuh"
#include "cuda/attention/sm90/wgmma_ops.cuh"

namespace strata::cuda::flash {

// MINB: CTAs per SM the registers must allow.
template <int D, int WG, int BN, bool X3, int MINB, bool VREG = false>
__global__ void __launch_bounds__(128 * WG, MINB) flash_wgmma_tf32_kernel(const FlashArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgmmaTf32Config<D, WG, BN, X3, VREG>;
  using Op = Tf32<X3>;
  constexpr int BM = C::kBM, kThreads = C::kThreads, kParts = C::kParts;
  constexpr int kQBytes = C::kQBytes, kTileBytes = C::kTileBytes;
  constexpr int kSlotBytes = kParts * kTileBytes;
  static_assert(D % 32 == 0 && BN % 32 == 0, "whole 32-float panels");
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const std::uint32_t raw_u = smem_u32(smem_raw);
  const std::uint32_t sQ_u = (raw_u + 1023u) & ~1023u;
  unsigned char* const sm = smem_raw + (sQ_u - raw_u);
  // Q parts, two K slots, the V^T slot(s), V's raw staging tile.
  constexpr int kOffK = kParts * kQBytes, kOffV = kOffK + 2 * kSlotBytes;
  constexpr int kOffS = kOffV + C::kVSlots * kSlotBytes;

  const int tid = threadIdx.x, wg = tid >> 7, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;
  const int wrow = wg * 64 + (warp & 3) * 16;  // this warp's first row

  const FlashTile<float> tile = flash_tile<float, BM>(a, blockIdx.x);
  const std::int64_t b = tile.b, h = tile.h, m0 = tile.m0;
  const int rows = tile.rows;
  const float *q = tile.q, *k = tile.k, *v = tile.v;

  const KeyTiles keys = band_key_tiles<BN>(a, m0, rows);  // the keys these rows can keep
  const std::int64_t t_begin = keys.begin, t_end = keys.end;
  const int n_tiles = int(t_end - t_begin);

  // K of tile `it` (counted from t_begin) goes to slot it % 2.
  auto load_k = [&](int it) {
    if (it >= n_tiles) return;
    const std::int64_t n0 = (t_begin + it) * BN;
    const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
    load_panels_f32<D, BN, kThreads>(sQ_u + kOffK + (it & 1) * kSlotBytes, k + n0 * a.k_ns, a.k_ns,
                                     nrows, a.d, tid);
  };
  auto round_k = [&](int it) {
    if (it >= n_tiles) return;
    round_own_chunks<D, BN, kThreads, X3>(sm + kOffK + (it & 1) * kSlotBytes, kTileBytes, tid);
  };

  // V: cp.async into a raw staging tile, then each thread stores the
  // chunks it copied transposed, rounded (and split), into the V^T slot:
  // BN / 32 panels of D rows (one per column of V) of 128 bytes (32 keys in
  // the order 0 2 4 6 1 3 5 7 per 8), swizzled. A thread's chunks: one key
  // (16 per warp, lane % 16) and 4 columns every kColStep (2 per warp,
  // lane / 16), so a store of 32 lanes covers 16 keys x 2 V^T rows: 32
  // banks; the staging tile has K's panel layout (8 keys x one chunk per
  // access phase: 8 bank groups).
  constexpr int kKeyBlocks = BN / 16, kWarps = 4 * WG;
  static_assert(kWarps % kKeyBlocks == 0, "a thread keeps one key of the tile");
  constexpr int kColStep = 8 * (kWarps / kKeyBlocks);
  static_assert(D % kColStep == 0, "V columns must split over the warps");
  constexpr int kVChunks = D / kColStep;  // per thread
  const int v_key = (warp % kKeyBlocks) * 16 + (lane & 15);
  const int v_col = (warp / kKeyBlocks) * 8 + (lane >> 4) * 4;
  const int v_kp = (v_key & ~7) | ((v_key & 1) << 2) | ((v_key >> 1) & 3);
  auto v_stage_off = [&](int c) {  // byte offset of chunk c's 4 floats in the staging tile
    const int cc = (v_col + c * kColStep) >> 2;
    return (cc >> 3) * BN * 128 + v_key * 128 + (((cc & 7) ^ (v_key & 7)) << 4);
  };
  float4 vr[VREG ? kVChunks : 1];  // VREG: V of the next tile, in flight
  auto load_v = [&](int it) {
    if (it >= n_tiles) return;
    const std::int64_t n0 = (t_begin + it) * BN;
    const bool key_ok = v_key < a.N - n0;
    const float* p = v + (n0 + (key_ok ? v_key : 0)) * a.v_ns + v_col;
#pragma unroll
    for (int c = 0; c < kVChunks; ++c) {
      const bool ok = key_ok && v_col + c * kColStep < a.dv;
      if constexpr (VREG) {
        vr[c] = ok ? __ldg(reinterpret_cast<const float4*>(p + c * kColStep))
                   : make_float4(0.f, 0.f, 0.f, 0.f);
      } else {
        cp_async16(sQ_u + kOffS + v_stage_off(c), ok ? p + c * kColStep : v, ok ? 16 : 0);
      }
    }
  };
  auto store_vt = [&](int it) {
    if (it >= n_tiles) return;
    unsigned char* slot = sm + kOffV + (VREG ? 0 : (it & 1) * kSlotBytes);
    // Row n = column of V; chunk (kp % 32) / 4 of it at that ^ (n % 8).
    const int lane_off = (v_kp >> 5) * D * 128 + (v_kp & 3) * 4;
#pragma unroll
    for (int c = 0; c < kVChunks; ++c) {
      const float4 x4 =
          VREG ? vr[c] : *reinterpret_cast<const float4*>(sm + kOffS + v_stage_off(c));
      const float x[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int n = v_col + c * kColStep + e;
        const int off = lane_off + n * 128 + ((((v_kp & 31) >> 2) ^ (n & 7)) << 4);
        Op y;
        y.set(x[e]);
        *reinterpret_cast<std::uint32_t*>(slot + off) = y.big;
        if constexpr (X3) *reinterpret_cast<std::uint32_t*>(slot + kTileBytes + off) = y.small;
      }
    }
  };

  float o[D / 2], s[BN / 2];
  float ot[X3 ? D / 2 : 1];  // high: P V of one key tile, added to o in f32
  std::uint32_t pb[BN / 8][4], ps[X3 ? BN / 8 : 1][4];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
#pragma unroll
  for (int i = 0; i < (X3 ? D / 2 : 1); ++i) ot[i] = 0.f;
  float row_m[2] = {kNegInf, kNegInf}, row_l[2] = {0.f, 0.f};

  // Descriptors: Q rows of this warpgroup and K are K-major (a k-step of 8
  // floats is 32 bytes into the row, a panel every 4 steps); V^T too, its
  // rows the columns of V. Small parts: kQBytes / kTileBytes further.
  const std::uint64_t q_desc = wgmma::desc_sw128(sQ_u + wg * 64 * 128, 16, 1024);
  const std::uint64_t k_desc = wgmma::desc_sw128(sQ_u + kOffK, 16, 1024);
  const std::uint64_t v_desc = wgmma::desc_sw128(sQ_u + kOffV, 16, 1024);
  constexpr std::uint64_t kQSmall = kQBytes >> 4, kTSmall = kTileBytes >> 4;
  auto step = [](int kk, int panel_rows) {
    return std::uint64_t(((kk >> 2) * panel_rows * 128 + (kk & 3) * 32) >> 4);
  };
  // S = Q K^T (64 rows of this warpgroup x BN keys of tile it), issued;
  // high: Q_small K_big and Q_big K_small over all of d first.
  auto issue_s = [&](int it) {
    const std::uint64_t kst = k_desc + std::uint64_t(((it & 1) * kSlotBytes) >> 4);
    wgmma::fence();
    if constexpr (X3) {
#pragma unroll
      for (int kk = 0; kk < D / 8; ++kk)
        wgmma::Wgmma<BN, float>::ss(s, q_desc + kQSmall + step(kk, BM), kst + step(kk, BN), kk > 0);
#pragma unroll
      for (int kk = 0; kk < D / 8; ++kk)
        wgmma::Wgmma<BN, float>::ss(s, q_desc + step(kk, BM), kst + kTSmall + step(kk, BN), 1);
    }
#pragma unroll
    for (int kk = 0; kk < D / 8; ++kk)
      wgmma::Wgmma<BN, float>::ss(s, q_desc + step(kk, BM), kst + step(kk, BN), X3 || kk > 0);
    wgmma::commit();
  };
  // O += P V over tile it (medium), ot = P V (high: small terms first),
  // issued.
  auto issue_pv = [&](int it) {
    const std::uint64_t vst = v_desc + std::uint64_t(((VREG ? 0 : it & 1) * kSlotBytes) >> 4);
    wgmma::fence();
    if constexpr (X3) {
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk)
        wgmma::Wgmma<D, float>::rs(ot, ps[kk], vst + step(kk, D), kk > 0);
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk)
        wgmma::Wgmma<D, float>::rs(ot, pb[kk], vst + kTSmall + step(kk, D), 1);
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk)
        wgmma::Wgmma<D, float>::rs(ot, pb[kk], vst + step(kk, D), 1);
    } else {
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk)
        wgmma::Wgmma<D, float>::rs(o, pb[kk], vst + step(kk, D), 1);
    }
    wgmma::commit();
  };

  const HeadMask<float> mask = head_mask<float>(a, b, h);
  const std::int64_t i0 = m0 + wrow + g;  // this thread's rows: i0 and i0 + 8

  // The scores of tile it (complete in s) to probabilities in base 2, as
  // sm90/kernel_16bit.cuh's softmax without raw scores: scale, masks where the tile
  // needs them, online softmax for rows g (r = 0) and g + 8 (r = 1).
  // alpha: the factor O must take; returns whether any of this warp's
  // alphas is not 1.
  auto softmax = [&](int it, float* alpha) {
    const std::int64_t n0 = (t_begin + it) * BN;
    const bool inside_band =
        !a.has_band || (n0 >= m0 + BM - 1 + a.band_lo && n0 + BN - 1 <= m0 + a.band_hi);
    const bool need_mask = a.mask_kind != 0 || n0 + BN > a.N || !inside_band;
    const float c = a.scale_log2;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) s[i] *= c;
    if (need_mask) {
      mask_bounds_band<BN>(a, s, n0, i0, t4);
      // A mask tensor, read for the kept scores only: one pointer per row
      // stepping over the tile (per-element 64-bit offsets spilled).
      if (a.mask_kind != 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          std::int64_t off = (i0 + 8 * r) * a.mk_ms + (n0 + 2 * t4) * a.mk_ns;
#pragma unroll
          for (int j = 0; j < BN / 8; ++j, off += 8 * a.mk_ns) {
#pragma unroll
            for (int e1 = 0; e1 < 2; ++e1) {
              float& x = s[4 * j + 2 * r + e1];
              if (x == kNegInf) continue;
              const std::int64_t at = off + e1 * a.mk_ns;
              if (mask.is_bool && mask.bytes[at] == 0) x = kNegInf;
              if (mask.is_float) x += mask.values[at] * 1.4426950408889634f;
            }
          }
        }
      }
    }
    return online_softmax_tile<BN, false>(s, row_m, row_l, alpha, 1.f);
  };
  // O's end of a tile: medium rescales the wgmma accumulator once the
  // tile's P V is done (alpha is exactly 1 for the whole warp once the
  // maxima settle); high adds the tile's sum first.
  auto fold = [&](const float* alpha, bool moved) {
    if constexpr (X3) {
      if (moved) {
#pragma unroll
        for (int n = 0; n < D / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) o[4 * n + e] = (o[4 * n + e] + ot[4 * n + e]) * alpha[e >> 1];
      } else {
#pragma unroll
        for (int i = 0; i < D / 2; ++i) o[i] += ot[i];
      }
    } else if (moved) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[4 * n + e] *= alpha[e >> 1];
    }
  };
  // P (the A fragments of P V): k-step kk's k = t is key 2t, k = t + 4 key
  // 2t + 1, i.e. scores (c0, c2, c1, c3) of the 8-key block kk.
  auto pack_p = [&] {
#pragma unroll
    for (int kk = 0; kk < BN / 8; ++kk) {
      const int idx[4] = {4 * kk + 0, 4 * kk + 2, 4 * kk + 1, 4 * kk + 3};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        Op x;
        x.set(s[idx[i]]);
        pb[kk][i] = x.big;
        if constexpr (X3) ps[kk][i] = x.small;
      }
    }
  };
  auto wait_acc = [&] {
    wgmma::wait<0>();
    if constexpr (X3)
      wgmma::touch_regs<D / 2>(ot);
    else
      wgmma::touch_regs<D / 2>(o);
  };

  // Prologue: Q and the first two K tiles, rounded (split) by the threads
  // that copied them; V of tile 0 transposed, V of tile 1 staged.
  load_panels_f32<D, BM, kThreads>(sQ_u, q, a.q_ms, rows, a.d, tid);
  load_k(0);
  load_k(1);
  load_v(0);
  cp_async_commit();
  cp_async_wait<0>();
  round_own_chunks<D, BM, kThreads, X3>(sm, kQBytes, tid);
  round_k(0);
  round_k(1);
  store_vt(0);
  load_v(1);  // the staging chunks this thread just read (VREG: registers)
  cp_async_commit();
  wgmma::fence_proxy_async();
  __syncthreads();
  if (n_tiles > 0) {
    issue_s(0);
    wgmma::wait<0>();
    wgmma::touch_regs<BN / 2>(s);
    float alpha[2];
    (void)softmax(0, alpha);  // O is still 0
    pack_p();
  }
  __syncthreads();  // K slot 0 is free
  load_k(2);
  cp_async_commit();
  // Iteration it: S of it + 1 and P V of it in flight; meanwhile the
  // softmax of it + 1, then K of it + 2 rounded and V of it + 1 stored
  // transposed (both copied a tile ago). One barrier: it publishes them to
  // wgmma and frees K's slot of it + 1 for K of it + 3 (V's staging tile is
  // only ever touched by the thread that copies each chunk).
  for (int it = 0; it + 1 < n_tiles; ++it) {
    issue_s(it + 1);
    issue_pv(it);
    wgmma::wait<1>();
    wgmma::touch_regs<BN / 2>(s);
    float alpha[2];
    const bool moved = softmax(it + 1, alpha);
    cp_async_wait<0>();
    round_k(it + 2);
    if constexpr (!VREG) store_vt(it + 1);
    wait_acc();
    fold(alpha, moved);
    pack_p();
    if constexpr (VREG) {
      __syncthreads();  // every warpgroup's P V of it is done: the V^T slot is free
      load_k(it + 3);
      store_vt(it + 1);
      load_v(it + 2);
      wgmma::fence_proxy_async();
      __syncthreads();
    } else {
      wgmma::fence_proxy_async();
      __syncthreads();
      load_k(it + 3);
      load_v(it + 2);
    }
    cp_async_commit();
  }
  if (n_tiles > 0) {
    issue_pv(n_tiles - 1);
    wait_acc();
    const float one[2] = {1.f, 1.f};
    fold(one, false);
  }
  cp_async_wait<0>();
  __syncthreads();

  // Finish the rows: full row sums, out = o / l (0 when nothing was kept).
  float inv[2];
  finish_rows(a, flash_lse(a, b, h), i0, row_m, row_l, inv, t4);

  // Stage the output over Q ([BM][D] floats, 16-byte chunk c of row r at
  // c ^ (r % 8)), then store whole rows: 16-byte vectors where the layout
  // allows, elements otherwise.
  float* stage = reinterpret_cast<float*>(sm);
  static_assert((D / 4) % 8 == 0, "the chunk swizzle stays inside the row");
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = wrow + g + 8 * r, ch = 2 * n + (t4 >> 1);
      *reinterpret_cast<float2*>(stage + row * D + ((ch ^ (row & 7)) << 2) + 2 * (t4 & 1)) =
          make_float2(o[4 * n + 2 * r] * inv[r], o[4 * n + 2 * r + 1] * inv[r]);
    }
  __syncthreads();
  float* out = static_cast<float*>(a.out) + batch_off(a, b, a.o_bs) + h * a.o_hs + m0 * a.o_ms;
  constexpr int kChunks = D / 4;
  for (int i = tid; i < BM * kChunks; i += kThreads) {
    const int r = i / kChunks, cc = i % kChunks;
    if (r >= rows || cc * 4 >= a.dv) continue;
    const float* src = stage + r * D + ((cc ^ (r & 7)) << 2);
    float* dst = out + r * a.o_ms + cc * 4 * a.o_ds;
    if (a.o_vec) {
      *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
    } else {
      for (int e = 0; e < 4 && cc * 4 + e < a.dv; ++e) dst[e * a.o_ds] = src[e];
    }
  }
#else
  (void)a;  // built without sm_90a: never launched (the tables are empty without
            // STRATA_CUDA_WGMMA)
#endif
}

}  // namespace strata::cuda::flash
