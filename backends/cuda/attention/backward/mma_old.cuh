#pragma once
// TEMPORARY (the sweep's baseline): the kernels before this branch.
// The backward's two main kernels for bf16/f16 on the tensor cores
// (mma.sync m16n8k16, f32 accumulation), head dims up to D (64 or 128).
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
//
// - dkdv_mma_kernel: one CTA per (batch, kv head, BN keys), 16 keys per
//   warp; K and V stay in shared memory (KVREG: their A fragments in
//   registers) while Q, dO, L and Dw tiles of BM queries of every q head of
//   the group stream through two stages of cp.async. Per tile, with the
//   keys as rows: S^T = K Q^T, dP^T = V dO^T, then dV += P^T dO and
//   dK += dS^T Q (P^T and dS^T, rounded to T, are the A operands straight
//   from the accumulators). dK, dV stay in registers, written once.
// - dq_mma_kernel: one CTA per (batch, q head, BM queries), 16 per warp, Q
//   and dO fragments in registers, K and V tiles of BN keys streaming:
//   S = Q K^T, dP = dO V^T, dQ += dS K.
// Each gradient element is summed by one thread in a fixed order: no
// atomics, the same bits run to run.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/sm80/kernel_16bit.cuh"

namespace strata::cuda::bwd::old {

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

template <class T>
__device__ __forceinline__ void head_mask16(const AttentionArgs& a, std::int64_t b, std::int64_t h,
                                            const unsigned char*& mb, const T*& mf) {
  mb = nullptr;
  mf = nullptr;
  if (!a.mask.data) return;
  const std::int64_t off = attn::head_offset(a.mask, b, h);
  if (a.mask.dtype == DType::boolean)
    mb = static_cast<const unsigned char*>(a.mask.data) + off;
  else
    mf = static_cast<const T*>(a.mask.data) + off;
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

template <class T, int D, int BN, int BM, bool KVREG>
__global__ void __launch_bounds__(BN * 2, 2) dkdv_mma_kernel(const BwdParams p) {
  using Mma = flash::MmaType<T>;
  constexpr int kThreads = BN * 2;  // BN / 16 warps
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + BN * D;
  T* sQ = sV + BN * D;                                    // [2][BM][D]
  T* sO = sQ + 2 * BM * D;                                // [2][BM][D]
  float* sL = reinterpret_cast<float*>(sO + 2 * BM * D);  // [2][BM]
  float* sD = sL + 2 * BM;                                // [2][BM]
  const AttentionArgs& a = p.g.fwd;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;

  const std::int64_t nt = blockIdx.x % p.tiles, bk = blockIdx.x / p.tiles;
  const std::int64_t b = bk / a.Hkv, hk = bk - b * a.Hkv;
  const std::int64_t n0 = nt * BN;
  const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
  // Query tiles that keep one of the keys [n0, n0 + nrows), per q head.
  const std::int64_t q_lo = n0 - a.band_hi > 0 ? n0 - a.band_hi : 0;
  const std::int64_t q_hi = n0 + nrows - a.band_lo < a.M ? n0 + nrows - a.band_lo : a.M;
  const std::int64_t t_lo = q_lo / BM, per_head = q_lo < q_hi ? (q_hi + BM - 1) / BM - t_lo : 0;
  const std::int64_t steps = per_head * p.group;

  const std::int64_t qrs = attn::row_stride(a.q), ors = attn::row_stride(p.g.dout);
  const T* qb = static_cast<const T*>(a.q.data) + attn::batch_offset(a.q, b);
  const T* ob = static_cast<const T*>(p.g.dout.data) + attn::batch_offset(p.g.dout, b);
  const std::uint32_t sK_u = smem_u32(sK), sV_u = smem_u32(sV), sQ_u = smem_u32(sQ),
                      sO_u = smem_u32(sO), sL_u = smem_u32(sL), sD_u = smem_u32(sD);
  constexpr std::uint32_t kTile = BM * D * 2;  // bytes of one Q or dO stage
  // Step s: q head hk * group + s / per_head, query tile t_lo + s % per_head.
  auto load_step = [&](std::int64_t s, int stage) {
    const std::int64_t h = hk * p.group + s / per_head, m0 = (t_lo + s % per_head) * BM;
    const int rows = a.M - m0 < BM ? int(a.M - m0) : BM;
    load_tile<T, D, BM, kThreads>(sQ_u + stage * kTile, qb + h * attn::head_stride(a.q) + m0 * qrs,
                                  qrs, rows, int(a.d), tid);
    load_tile<T, D, BM, kThreads>(sO_u + stage * kTile,
                                  ob + h * attn::head_stride(p.g.dout) + m0 * ors, ors, rows,
                                  int(a.dv), tid);
    const std::int64_t w = (b * a.Hq + h) * p.Mp + m0;  // m0 + BM <= Mp
    if (tid < BM / 4) {
      cp_async16(sL_u + (stage * BM + 4 * tid) * 4, static_cast<const float*>(p.L) + w + 4 * tid,
                 16);
    } else if (tid < BM / 2) {
      const int u = tid - BM / 4;
      cp_async16(sD_u + (stage * BM + 4 * u) * 4, static_cast<const float*>(p.Dw) + w + 4 * u, 16);
    }
  };

  const std::int64_t krs = attn::row_stride(a.k), vrs = attn::row_stride(a.v);
  load_tile<T, D, BN, kThreads>(sK_u, attn::head_ptr<const T>(a.k, b, hk) + n0 * krs, krs, nrows,
                                int(a.d), tid);
  load_tile<T, D, BN, kThreads>(sV_u, attn::head_ptr<const T>(a.v, b, hk) + n0 * vrs, vrs, nrows,
                                int(a.dv), tid);
  if (steps > 0) load_step(0, 0);
  cp_async_commit();

  float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dk[n][e] = dv[n][e] = 0.f;
  std::uint32_t kf[KVREG ? D / 16 : 1][4], vf[KVREG ? D / 16 : 1][4];
  const int wk = warp * 16;  // this warp's first key in the tile
  const float c = p.scale_log2;
  const unsigned char* mb = nullptr;
  const T* mf = nullptr;

  for (std::int64_t s = 0; s < steps; ++s) {
    const int stage = int(s & 1);
    if (s + 1 < steps) load_step(s + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (KVREG && s == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        ldsm_x4(kf[KVREG ? kk : 0], sK_u + a_frag<D>(lane, wk, kk));
        ldsm_x4(vf[KVREG ? kk : 0], sV_u + a_frag<D>(lane, wk, kk));
      }
    }
    const std::int64_t h = hk * p.group + s / per_head, m0 = (t_lo + s % per_head) * BM;
    if (s % per_head == 0) head_mask16<T>(a, b, h, mb, mf);
    const std::uint32_t q_st = sQ_u + stage * kTile, o_st = sO_u + stage * kTile;

    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys x BM queries.
    float st[BM / 8][4], dpt[BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) st[j][e] = dpt[j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if (!KVREG) {
        ldsm_x4(kf[0], sK_u + a_frag<D>(lane, wk, kk));
        ldsm_x4(vf[0], sV_u + a_frag<D>(lane, wk, kk));
      }
      const int r = KVREG ? kk : 0;
#pragma unroll
      for (int jp = 0; jp < BM / 16; ++jp) {
        std::uint32_t bf[4];
        ldsm_x4(bf, q_st + b_frag<D>(lane, 16 * jp, kk));
        Mma::mma(st[2 * jp], kf[r], bf[0], bf[1]);
        Mma::mma(st[2 * jp + 1], kf[r], bf[2], bf[3]);
        ldsm_x4(bf, o_st + b_frag<D>(lane, 16 * jp, kk));
        Mma::mma(dpt[2 * jp], vf[r], bf[0], bf[1]);
        Mma::mma(dpt[2 * jp + 1], vf[r], bf[2], bf[3]);
      }
    }

    // P^T and dS^T. Element e of n-tile j: key n0 + wk + g + 8 (e >> 1),
    // query m0 + 8 j + 2 t4 + (e & 1).
    const std::int64_t key0 = n0 + wk;
    const bool inside = key0 >= m0 + BM - 1 + a.band_lo && key0 + 15 <= m0 + a.band_hi;
    const bool need_mask = a.mask.data != nullptr || !inside;
    const float* l_st = sL + stage * BM;
    const float* d_st = sD + stage * BM;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int qi = 8 * j + 2 * t4 + (e & 1);
        float x = st[j][e] * c;
        if (need_mask) x = masked(a, mb, mf, m0 + qi, key0 + g + 8 * (e >> 1), x);
        const float pr = ex2(x - l_st[qi]);
        st[j][e] = pr;
        dpt[j][e] = pr * (dpt[j][e] - d_st[qi]);
      }

      // dV += P^T dO and dK += dS^T Q, over the BM queries.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      const std::uint32_t ap[4] = {Mma::pack(st[2 * kk][0], st[2 * kk][1]),
                                   Mma::pack(st[2 * kk][2], st[2 * kk][3]),
                                   Mma::pack(st[2 * kk + 1][0], st[2 * kk + 1][1]),
                                   Mma::pack(st[2 * kk + 1][2], st[2 * kk + 1][3])};
      const std::uint32_t as[4] = {Mma::pack(dpt[2 * kk][0], dpt[2 * kk][1]),
                                   Mma::pack(dpt[2 * kk][2], dpt[2 * kk][3]),
                                   Mma::pack(dpt[2 * kk + 1][0], dpt[2 * kk + 1][1]),
                                   Mma::pack(dpt[2 * kk + 1][2], dpt[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t bf[4];
        ldsm_x4_trans(bf, o_st + bt_frag<D>(lane, 16 * kk, np));
        Mma::mma(dv[2 * np], ap, bf[0], bf[1]);
        Mma::mma(dv[2 * np + 1], ap, bf[2], bf[3]);
        ldsm_x4_trans(bf, q_st + bt_frag<D>(lane, 16 * kk, np));
        Mma::mma(dk[2 * np], as, bf[0], bf[1]);
        Mma::mma(dk[2 * np + 1], as, bf[2], bf[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the next step's load
  }
  cp_async_wait<0>();

  const std::int64_t dkrs = attn::row_stride(p.g.dk), dvrs = attn::row_stride(p.g.dv);
  store_acc<T, D>(attn::head_ptr<T>(p.g.dk, b, hk) + n0 * dkrs, dkrs, attn::col_stride(p.g.dk), dk,
                  wk, nrows, int(a.d), float(p.scale), lane);
  store_acc<T, D>(attn::head_ptr<T>(p.g.dv, b, hk) + n0 * dvrs, dvrs, attn::col_stride(p.g.dv), dv,
                  wk, nrows, int(a.dv), 1.f, lane);
}

template <class T, int D, int BM, int BN>
__global__ void __launch_bounds__(BM * 2, 2) dq_mma_kernel(const BwdParams p) {
  using Mma = flash::MmaType<T>;
  constexpr int kThreads = BM * 2;  // BM / 16 warps
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sO = sQ + BM * D;
  T* sK = sO + BM * D;  // [2][BN][D]
  T* sV = sK + 2 * BN * D;
  const AttentionArgs& a = p.g.fwd;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;

  std::int64_t mt = blockIdx.x % p.tiles;
  const std::int64_t bh = blockIdx.x / p.tiles;
  // Under a band that bounds keys from above (causal), the last query tiles
  // reach the most keys: they go first.
  if (a.band_hi < kNoLimit) mt = p.tiles - 1 - mt;
  const std::int64_t b = bh / a.Hq, h = bh - b * a.Hq, hk = h / p.group;
  const std::int64_t m0 = mt * BM;
  const int rows = a.M - m0 < BM ? int(a.M - m0) : BM;
  const std::int64_t kv_lo = m0 + a.band_lo > 0 ? m0 + a.band_lo : 0;
  const std::int64_t kv_hi = m0 + rows + a.band_hi < a.N ? m0 + rows + a.band_hi : a.N;
  const std::int64_t t_begin = kv_lo / BN, t_end = kv_lo < kv_hi ? (kv_hi + BN - 1) / BN : t_begin;

  const std::uint32_t sQ_u = smem_u32(sQ), sO_u = smem_u32(sO), sK_u = smem_u32(sK),
                      sV_u = smem_u32(sV);
  constexpr std::uint32_t kTile = BN * D * 2;
  const T* k = attn::head_ptr<const T>(a.k, b, hk);
  const T* v = attn::head_ptr<const T>(a.v, b, hk);
  const std::int64_t krs = attn::row_stride(a.k), vrs = attn::row_stride(a.v);
  auto load_kv = [&](std::int64_t t, int stage) {
    const std::int64_t j0 = t * BN;
    const int n = a.N - j0 < BN ? int(a.N - j0) : BN;
    load_tile<T, D, BN, kThreads>(sK_u + stage * kTile, k + j0 * krs, krs, n, int(a.d), tid);
    load_tile<T, D, BN, kThreads>(sV_u + stage * kTile, v + j0 * vrs, vrs, n, int(a.dv), tid);
  };
  const std::int64_t qrs = attn::row_stride(a.q), ors = attn::row_stride(p.g.dout);
  load_tile<T, D, BM, kThreads>(sQ_u, attn::head_ptr<const T>(a.q, b, h) + m0 * qrs, qrs, rows,
                                int(a.d), tid);
  load_tile<T, D, BM, kThreads>(sO_u, attn::head_ptr<const T>(p.g.dout, b, h) + m0 * ors, ors, rows,
                                int(a.dv), tid);
  if (t_begin < t_end) load_kv(t_begin, 0);
  cp_async_commit();

  // This thread's rows: i0 and i0 + 8.
  const int wrow = warp * 16;
  const std::int64_t i0 = m0 + wrow + g;
  const std::int64_t w = bh * p.Mp + m0 + wrow + g;  // < Mp - 8
  const float* Lw = static_cast<const float*>(p.L);
  const float* Dw = static_cast<const float*>(p.Dw);
  const float l2[2] = {Lw[w], Lw[w + 8]};
  const float dd[2] = {Dw[w], Dw[w + 8]};
  const unsigned char* mb;
  const T* mf;
  head_mask16<T>(a, b, h, mb, mf);
  const float c = p.scale_log2;

  float dq[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dq[n][e] = 0.f;
  std::uint32_t qf[D / 16][4], of[D / 16][4];

  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const int it = int(t - t_begin), stage = it & 1;
    if (t + 1 < t_end) load_kv(t + 1, stage ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();
    if (it == 0) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        ldsm_x4(qf[kk], sQ_u + a_frag<D>(lane, wrow, kk));
        ldsm_x4(of[kk], sO_u + a_frag<D>(lane, wrow, kk));
      }
    }
    const std::uint32_t k_st = sK_u + stage * kTile, v_st = sV_u + stage * kTile;

    // S = Q K^T and dP = dO V^T: this warp's 16 queries x BN keys.
    float s[BN / 8][4], dp[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = dp[j][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jp = 0; jp < BN / 16; ++jp) {
        std::uint32_t bf[4];
        ldsm_x4(bf, k_st + b_frag<D>(lane, 16 * jp, kk));
        Mma::mma(s[2 * jp], qf[kk], bf[0], bf[1]);
        Mma::mma(s[2 * jp + 1], qf[kk], bf[2], bf[3]);
        ldsm_x4(bf, v_st + b_frag<D>(lane, 16 * jp, kk));
        Mma::mma(dp[2 * jp], of[kk], bf[0], bf[1]);
        Mma::mma(dp[2 * jp + 1], of[kk], bf[2], bf[3]);
      }

    // P and dS. Element e of n-tile j: query i0 + 8 (e >> 1), key
    // j0 + 8 j + 2 t4 + (e & 1).
    const std::int64_t j0 = t * BN;
    const bool inside = j0 >= m0 + BM - 1 + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
    const bool need_mask = a.mask.data != nullptr || !inside;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[j][e] * c;
        if (need_mask) x = masked(a, mb, mf, i0 + 8 * (e >> 1), j0 + 8 * j + 2 * t4 + (e & 1), x);
        const float pr = ex2(x - l2[e >> 1]);
        dp[j][e] = pr * (dp[j][e] - dd[e >> 1]);
      }

      // dQ += dS K over the BN keys.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      const std::uint32_t as[4] = {Mma::pack(dp[2 * kk][0], dp[2 * kk][1]),
                                   Mma::pack(dp[2 * kk][2], dp[2 * kk][3]),
                                   Mma::pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
                                   Mma::pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t bf[4];
        ldsm_x4_trans(bf, k_st + bt_frag<D>(lane, 16 * kk, np));
        Mma::mma(dq[2 * np], as, bf[0], bf[1]);
        Mma::mma(dq[2 * np + 1], as, bf[2], bf[3]);
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's load
  }
  cp_async_wait<0>();

  const std::int64_t rs = attn::row_stride(p.g.dq);
  store_acc<T, D>(attn::head_ptr<T>(p.g.dq, b, h) + m0 * rs, rs, attn::col_stride(p.g.dq), dq, wrow,
                  rows, int(a.d), float(p.scale), lane);
}

}  // namespace strata::cuda::bwd::old
