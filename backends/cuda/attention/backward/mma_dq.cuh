#pragma once
// dQ of the bf16/f16 backward on the tensor cores (mma.cuh has the shared
// pieces): one CTA per (batch, q head, BM queries), 16 MT queries per warp,
// Q and dO fragments in registers, K and V tiles of BN keys streaming through
// STAGES stages of cp.async: S = Q K^T, dP = dO V^T, dQ += dS K.
#include "cuda/attention/backward/mma.cuh"

namespace strata::cuda::bwd {

template <int BM, int MT>
inline constexpr int kDqThreads = BM / (16 * MT) * 32;

template <class T, int D, int BM, int BN, int MT, int STAGES, int MINB>
__global__ void __launch_bounds__(kDqThreads<BM, MT>, MINB) dq_mma_kernel(const BwdParams p) {
  using Mma = flash::MmaType<T>;
  constexpr int kThreads = kDqThreads<BM, MT>;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sO = sQ + BM * D;
  T* sK = sO + BM * D;  // [STAGES][BN][D]
  T* sV = sK + STAGES * BN * D;
  const AttentionArgs& a = p.g.fwd;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;

  const DqCta cta = dq_cta(p);
  const std::int64_t bh = cta.bh, b = cta.b, h = cta.h, hk = cta.hk, m0 = cta.tile * BM;
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
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (t_begin + s < t_end) load_kv(t_begin + s, s);
    cp_async_commit();
  }

  // This thread's rows: i0 + 16 mt and i0 + 16 mt + 8.
  const int wrow = warp * 16 * MT;
  const std::int64_t i0 = m0 + wrow + g;
  const std::int64_t w = bh * p.Mp + m0 + wrow + g;  // < Mp - 8
  const float* Lw = static_cast<const float*>(p.L);
  const float* Dw = static_cast<const float*>(p.Dw);
  float l2[MT][2], dd[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      l2[mt][r] = Lw[w + 16 * mt + 8 * r];
      dd[mt][r] = Dw[w + 16 * mt + 8 * r];
    }
  const unsigned char* mb;
  const T* mf;
  head_mask<T>(a, b, h, mb, mf);
  const float c = p.scale_log2;

  float dq[MT][D / 8][4];
  zero_acc(dq);
  std::uint32_t qf[D / 16][MT][4], of[D / 16][MT][4];  // [k-step][m-tile]
  const FragOff<D> fb(lane, 0), fbt(lane, 1);

  for (std::int64_t t = t_begin; t < t_end; ++t) {
    const int it = int(t - t_begin), stage = it % STAGES;
    if (t + STAGES - 1 < t_end) load_kv(t + STAGES - 1, (it + STAGES - 1) % STAGES);
    cp_async_commit();
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    if (it == 0) {
      const FragOff<D> fa(lane, 2);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          ldsm_x4(qf[kk][mt], sQ_u + fa.at(wrow + 16 * mt, kk));
          ldsm_x4(of[kk][mt], sO_u + fa.at(wrow + 16 * mt, kk));
        }
    }
    const std::uint32_t k_st = sK_u + stage * kTile, v_st = sV_u + stage * kTile;

    // S = Q K^T and dP = dO V^T: this warp's 16 MT queries x BN keys.
    float s[MT][BN / 8][4], dp[MT][BN / 8][4];
    zero_acc(s);
    zero_acc(dp);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
      for (int jp = 0; jp < BN / 16; ++jp) {
        std::uint32_t bf[4];
        ldsm_x4(bf, k_st + fb.at(16 * jp, kk));
        mma_n16<Mma>(s, jp, qf[kk], bf);
        ldsm_x4(bf, v_st + fb.at(16 * jp, kk));
        mma_n16<Mma>(dp, jp, of[kk], bf);
      }

    // P and dS. Element e of n-tile j of m-tile mt: query
    // i0 + 16 mt + 8 (e >> 1), key j0 + 8 j + 2 t4 + (e & 1).
    const std::int64_t j0 = t * BN;
    const bool inside = j0 >= m0 + BM - 1 + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
    const bool need_mask = a.mask.data != nullptr || !inside;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = s[mt][j][e] * c;
          if (need_mask)
            x = masked(a, mb, mf, i0 + 16 * mt + 8 * (e >> 1), j0 + 8 * j + 2 * t4 + (e & 1), x);
          const float pr = ex2(x - l2[mt][e >> 1]);
          dp[mt][j][e] = pr * (dp[mt][j][e] - dd[mt][e >> 1]);
        }

        // dQ += dS K over the BN keys.
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      std::uint32_t as[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) acc_to_a<Mma>(as[mt], dp[mt], kk);
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t bf[4];
        ldsm_x4_trans(bf, k_st + fbt.at(16 * kk, np));
        mma_n16<Mma>(dq, np, as, bf);
      }
    }
    __syncthreads();  // this stage is refilled by a later iteration's load
  }
  cp_async_wait<0>();

  const std::int64_t rs = attn::row_stride(p.g.dq);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
    store_acc<T, D>(attn::head_ptr<T>(p.g.dq, b, h) + m0 * rs, rs, attn::col_stride(p.g.dq), dq[mt],
                    wrow + 16 * mt, rows, int(a.d), float(p.scale), lane);
}

}  // namespace strata::cuda::bwd
