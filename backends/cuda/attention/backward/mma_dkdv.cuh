#pragma once
// dK and dV of the bf16/f16 backward on the tensor cores (mma.cuh has the
// shared pieces): one CTA per (batch, kv head, BN keys), 16 MT keys per
// warp. K and V stay in shared memory (KVREG: their A fragments in
// registers) while Q, dO, L and Dw tiles of BM queries of every q head of
// the group stream through STAGES stages of cp.async. Per tile, with the
// keys as rows: S^T = K Q^T, dP^T = V dO^T, then dV += P^T dO and
// dK += dS^T Q (P^T and dS^T, rounded to T, are the A operands straight from
// the accumulators). dK, dV stay in registers, written once.
#include "cuda/attention/backward/mma.cuh"

namespace strata::cuda::bwd {

template <int BN, int MT>
inline constexpr int kDkdvThreads = BN / (16 * MT) * 32;

template <class T, int D, int BN, int BM, int MT, int STAGES, bool KVREG, int MINB>
__global__ void __launch_bounds__(kDkdvThreads<BN, MT>, MINB) dkdv_mma_kernel(const BwdParams p) {
  using Mma = flash::MmaType<T>;
  constexpr int kThreads = kDkdvThreads<BN, MT>;
  static_assert(kThreads >= BM / 2, "too few threads for the L and Dw copies");
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + BN * D;
  T* sQ = sV + BN * D;                                         // [STAGES][BM][D]
  T* sO = sQ + STAGES * BM * D;                                // [STAGES][BM][D]
  float* sL = reinterpret_cast<float*>(sO + STAGES * BM * D);  // [STAGES][BM]
  float* sD = sL + STAGES * BM;                                // [STAGES][BM]
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
  // Steps go over the query tiles of q head hk * group, then the next head:
  // (lh, lt) is the next step to load, (ch, ct) the one computed.
  std::int64_t lh = hk * p.group, lt = 0;
  auto load_next = [&](int stage) {
    const std::int64_t m0 = (t_lo + lt) * BM;
    const int rows = a.M - m0 < BM ? int(a.M - m0) : BM;
    load_tile<T, D, BM, kThreads>(sQ_u + stage * kTile, qb + lh * attn::head_stride(a.q) + m0 * qrs,
                                  qrs, rows, int(a.d), tid);
    load_tile<T, D, BM, kThreads>(sO_u + stage * kTile,
                                  ob + lh * attn::head_stride(p.g.dout) + m0 * ors, ors, rows,
                                  int(a.dv), tid);
    const std::int64_t w = (b * a.Hq + lh) * p.Mp + m0;  // m0 + BM <= Mp
    if (tid < BM / 4) {
      cp_async16(sL_u + (stage * BM + 4 * tid) * 4, static_cast<const float*>(p.L) + w + 4 * tid,
                 16);
    } else if (tid < BM / 2) {
      const int u = tid - BM / 4;
      cp_async16(sD_u + (stage * BM + 4 * u) * 4, static_cast<const float*>(p.Dw) + w + 4 * u, 16);
    }
    if (++lt == per_head) {
      lt = 0;
      ++lh;
    }
  };

  const std::int64_t krs = attn::row_stride(a.k), vrs = attn::row_stride(a.v);
  load_tile<T, D, BN, kThreads>(sK_u, attn::head_ptr<const T>(a.k, b, hk) + n0 * krs, krs, nrows,
                                int(a.d), tid);
  load_tile<T, D, BN, kThreads>(sV_u, attn::head_ptr<const T>(a.v, b, hk) + n0 * vrs, vrs, nrows,
                                int(a.dv), tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load_next(s);
    cp_async_commit();
  }

  float dk[MT][D / 8][4], dv[MT][D / 8][4];
  zero_acc(dk);
  zero_acc(dv);
  std::uint32_t kf[KVREG ? MT : 1][KVREG ? D / 16 : 1][4];
  std::uint32_t vf[KVREG ? MT : 1][KVREG ? D / 16 : 1][4];
  const int wk = warp * 16 * MT;  // this warp's first key in the tile
  const float c = p.scale_log2;
  const unsigned char* mb = nullptr;
  const T* mf = nullptr;
  const FragOff<D> fb(lane, 0), fbt(lane, 1), fa(lane, 2);
  std::int64_t ch = hk * p.group, ct = 0;

  for (std::int64_t s = 0; s < steps; ++s) {
    const int stage = int(s % STAGES);
    if (s + STAGES - 1 < steps) load_next(int((s + STAGES - 1) % STAGES));
    cp_async_commit();
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    if (KVREG && s == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
          ldsm_x4(kf[KVREG ? mt : 0][KVREG ? kk : 0], sK_u + fa.at(wk + 16 * mt, kk));
          ldsm_x4(vf[KVREG ? mt : 0][KVREG ? kk : 0], sV_u + fa.at(wk + 16 * mt, kk));
        }
    }
    const std::int64_t m0 = (t_lo + ct) * BM;
    if (ct == 0) head_mask<T>(a, b, ch, mb, mf);
    const std::uint32_t q_st = sQ_u + stage * kTile, o_st = sO_u + stage * kTile;

    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 MT keys x BM queries.
    float st[MT][BM / 8][4], dpt[MT][BM / 8][4];
    zero_acc(st);
    zero_acc(dpt);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      std::uint32_t ka[MT][4], va[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        if (KVREG) {
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            ka[mt][i] = kf[KVREG ? mt : 0][KVREG ? kk : 0][i];
            va[mt][i] = vf[KVREG ? mt : 0][KVREG ? kk : 0][i];
          }
        } else {
          ldsm_x4(ka[mt], sK_u + fa.at(wk + 16 * mt, kk));
          ldsm_x4(va[mt], sV_u + fa.at(wk + 16 * mt, kk));
        }
      }
#pragma unroll
      for (int jp = 0; jp < BM / 16; ++jp) {
        std::uint32_t bf[4];
        ldsm_x4(bf, q_st + fb.at(16 * jp, kk));
        mma_n16<Mma>(st, jp, ka, bf);
        ldsm_x4(bf, o_st + fb.at(16 * jp, kk));
        mma_n16<Mma>(dpt, jp, va, bf);
      }
    }

    // P^T and dS^T. Element e of n-tile j of m-tile mt: key
    // n0 + wk + 16 mt + g + 8 (e >> 1), query m0 + 8 j + 2 t4 + (e & 1).
    const std::int64_t key0 = n0 + wk;
    const bool inside = key0 >= m0 + BM - 1 + a.band_lo && key0 + 16 * MT - 1 <= m0 + a.band_hi;
    const bool need_mask = a.mask.data != nullptr || !inside;
    const float* l_st = sL + stage * BM;
    const float* d_st = sD + stage * BM;
#pragma unroll
    for (int j = 0; j < BM / 8; ++j) {
      const int q0 = 8 * j + 2 * t4;
      const float2 lq = *reinterpret_cast<const float2*>(l_st + q0);
      const float2 dq = *reinterpret_cast<const float2*>(d_st + q0);
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float x = st[mt][j][e] * c;
          if (need_mask)
            x = masked(a, mb, mf, m0 + q0 + (e & 1), key0 + 16 * mt + g + 8 * (e >> 1), x);
          const float pr = ex2(x - ((e & 1) ? lq.y : lq.x));
          st[mt][j][e] = pr;
          dpt[mt][j][e] = pr * (dpt[mt][j][e] - ((e & 1) ? dq.y : dq.x));
        }
    }

    // dV += P^T dO and dK += dS^T Q, over the BM queries.
#pragma unroll
    for (int kk = 0; kk < BM / 16; ++kk) {
      // P^T and dS^T packed in one loop: two acc_to_a calls would reorder
      // the compiled code.
      std::uint32_t ap[MT][4], as[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float* ps = st[mt][2 * kk + (i >> 1)];
          const float* ds = dpt[mt][2 * kk + (i >> 1)];
          ap[mt][i] = Mma::pack(ps[2 * (i & 1)], ps[2 * (i & 1) + 1]);
          as[mt][i] = Mma::pack(ds[2 * (i & 1)], ds[2 * (i & 1) + 1]);
        }
#pragma unroll
      for (int np = 0; np < D / 16; ++np) {
        std::uint32_t bf[4];
        ldsm_x4_trans(bf, o_st + fbt.at(16 * kk, np));
        mma_n16<Mma>(dv, np, ap, bf);
        ldsm_x4_trans(bf, q_st + fbt.at(16 * kk, np));
        mma_n16<Mma>(dk, np, as, bf);
      }
    }
    if (++ct == per_head) {
      ct = 0;
      ++ch;
    }
    __syncthreads();  // this stage is refilled by a later step's load
  }
  cp_async_wait<0>();

  const std::int64_t dkrs = attn::row_stride(p.g.dk), dvrs = attn::row_stride(p.g.dv);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    store_acc<T, D>(attn::head_ptr<T>(p.g.dk, b, hk) + n0 * dkrs, dkrs, attn::col_stride(p.g.dk),
                    dk[mt], wk + 16 * mt, nrows, int(a.d), float(p.scale), lane);
    store_acc<T, D>(attn::head_ptr<T>(p.g.dv, b, hk) + n0 * dvrs, dvrs, attn::col_stride(p.g.dv),
                    dv[mt], wk + 16 * mt, nrows, int(a.dv), 1.f, lane);
  }
}

}  // namespace strata::cuda::bwd
