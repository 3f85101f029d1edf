#pragma once
// The f64 tensor-core streaming kernel: FlashAttention-2 on DMMA
// (mma.sync m16n8k8 .f64, sm_90). Each multiply-add is an IEEE f64 fused
// multiply-add, as in the DFMA kernel (ffma/tiled.cuh), but on the
// tensor cores, whose f64 rate on H100/H200 is twice the DFMA pipe's.
//
// A warp owns 16 query rows and every key of a tile. Lane (g, t) = (lane / 4,
// lane % 4) holds, for each 8-key group n, the scores of rows g and g + 8 at
// keys 8n + 2t and 8n + 2t + 1 (the m16n8 accumulator layout), so row maxima
// and sums reduce over the 4 lanes of a quad with two xor shuffles.
//
// P never goes through shared memory: P V takes each 8-key group as one k8
// step whose contraction index is permuted (k = t: key 8n + 2t, k = t + 4:
// key 8n + 2t + 1), which makes its A fragment exactly the score registers;
// the V rows are read in the same order.
//
// Shared memory, rows padded so that the 8 rows x 4 columns of a fragment
// load fall in distinct banks:
//   Q [BM][DK + 4]           resident for the block
//   K [2][BN][DK + 4]        double-buffered: tile j + 1 loads while j computes
//   V [2][BN][DV + 2]
#include "cuda/attention/ffma/tiled.cuh"  // load_tile

namespace strata::cuda {

// NW warps of 16 query rows; BN keys per tile; serves d <= DK, dv <= DV.
template <int NW_, int BN_, int DK_, int DV_, int MINB_>
struct DmmaConfig {
  using type = double;
  static constexpr int NW = NW_, BM = 16 * NW_, BN = BN_, DK = DK_, DV = DV_, MINB = MINB_;
  static constexpr int NT = 32 * NW;
  static constexpr int NS = BN / 8, NO = DV / 8;  // 8-column groups of S and of O
  static constexpr int LDQ = DK + 4, LDK = DK + 4, LDV = DV + 2;
  static constexpr std::size_t smem_bytes =
      std::size_t(BM * LDQ + 2 * BN * LDK + 2 * BN * LDV) * sizeof(double);
  static_assert(DK % 8 == 0 && DV % 8 == 0 && BN % 8 == 0, "whole mma tiles");
};

// d += A B for one 16 x 8 x 8 tile. Lane (g, t) holds a = {A[g][t],
// A[g + 8][t], A[g][t + 4], A[g + 8][t + 4]}, b = {B[t][g], B[t + 4][g]},
// d = {D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]}.
// Built for sm_80 (the backend's floor: cp.async), the same product from
// four m8n8k4; that path compiles but has not run on a GPU here.
__device__ __forceinline__ void dmma16x8x8(double (&d)[4], double a0, double a1, double a2,
                                           double a3, double b0, double b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
#elif defined(__CUDA_ARCH__)
  const double a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
#pragma unroll
  for (int i = 0; i < 4; ++i)  // rows g (i even) or g + 8; k half i / 2
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
        : "+d"(d[i % 2 * 2]), "+d"(d[i % 2 * 2 + 1])
        : "d"(a[i]), "d"(b[i / 2]));
#endif
}

template <class C>
__global__ void __launch_bounds__(C::NT, C::MINB) attn_dmma_kernel(const AttnParams p) {
  constexpr int BM = C::BM, BN = C::BN, DK = C::DK, DV = C::DV, NT = C::NT;
  constexpr int NS = C::NS, NO = C::NO, LDQ = C::LDQ, LDK = C::LDK, LDV = C::LDV;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh)
  allow_dependents();
  double* Qs = reinterpret_cast<double*>(smem_raw);  // [BM][LDQ]
  double* Kb = Qs + BM * LDQ;                        // [2][BN][LDK]
  double* Vb = Kb + 2 * BN * LDK;                    // [2][BN][LDV]

  const AttentionArgs& a = p.a;
  const BlockWork<double> w = block_work<double, BM, BN>(p);  // dv_chunks == 1: DV covers dv
  const std::int64_t m0 = w.m0, row_last = w.row_last, j_begin = w.j_begin, j_end = w.j_end;

  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = 16 * (threadIdx.x / 32);  // the warp's first row in the block
  const double sl2 = p.scale_log2;
  double m_run[2] = {neg_inf<double>(), neg_inf<double>()}, l_run[2] = {0, 0};
  double o[NO][4];
#pragma unroll
  for (int c = 0; c < NO; ++c) o[c][0] = o[c][1] = o[c][2] = o[c][3] = 0;

  auto load_kv = [&](std::int64_t j0, int buf) {
    load_tile<double, BN, DK, LDK, NT>(Kb + buf * BN * LDK, w.k, attn::row_stride(a.k),
                                       attn::col_stride(a.k), j0, j_end, 0, a.d, p.k_vec, p.k_tvec);
    load_tile<double, BN, DV, LDV, NT>(Vb + buf * BN * LDV, w.v, attn::row_stride(a.v),
                                       attn::col_stride(a.v), j0, j_end, 0, a.dv, p.v_vec,
                                       p.v_tvec);
  };

  if (j_begin < j_end) {
    load_tile<double, BM, DK, LDQ, NT>(Qs, w.q, attn::row_stride(a.q), attn::col_stride(a.q), m0,
                                       a.M, 0, a.d, p.q_vec, p.q_tvec);
    load_kv(j_begin, 0);
    cp_async_commit();
    int buf = 0;
    for (std::int64_t j0 = j_begin; j0 < j_end; j0 += BN, buf ^= 1) {
      cp_async_wait<0>();
      __syncthreads();  // tile j0 visible; every warp is past the tile that used buf ^ 1
      if (j0 + BN < j_end) load_kv(j0 + BN, buf ^ 1);
      cp_async_commit();
      const double* Ks = Kb + buf * BN * LDK;
      const double* Vs = Vb + buf * BN * LDV;

      double s[NS][4];
#pragma unroll
      for (int n = 0; n < NS; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0;
#pragma unroll
      for (int ks = 0; ks < DK / 8; ++ks) {
        const double* q = Qs + (r0 + g) * LDQ + 8 * ks + t;
#pragma unroll
        for (int n = 0; n < NS; ++n) {
          const double* k = Ks + (8 * n + g) * LDK + 8 * ks + t;
          dmma16x8x8(s[n], q[0], q[8 * LDQ], q[4], q[8 * LDQ + 4], k[0], k[4]);
        }
      }

      // Scores to base 2 with masks; whole tiles inside the band skip the tests.
      const bool full = p.mask_kind == kMaskNone && j0 + BN <= j_end &&
                        j0 >= row_last + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
      double tmax[2] = {neg_inf<double>(), neg_inf<double>()};
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          double x = s[n][e] * sl2;
          if (!full) {
            const std::int64_t row = m0 + r0 + g + 8 * (e / 2), col = j0 + 8 * n + 2 * t + e % 2;
            double bias = 0;
            const bool kept =
                row < a.M && col < j_end && key_kept<double>(p, w.mask, row, col, &bias);
            x = kept ? x + bias : neg_inf<double>();
          }
          s[n][e] = x;
          tmax[e / 2] = fmax_(tmax[e / 2], x);
        }
      double m_use[2], alpha[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        tmax[h] = fmax_(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 1));
        tmax[h] = fmax_(tmax[h], __shfl_xor_sync(0xffffffffu, tmax[h], 2));
        const double m_new = fmax_(m_run[h], tmax[h]);
        // The guard only picks the exponent base; m_run keeps the true max.
        m_use[h] = m_new == neg_inf<double>() ? 0.0 : m_new;
        alpha[h] = fexp2(m_run[h] - m_use[h]);
        m_run[h] = m_new;
        l_run[h] *= alpha[h];
      }
      // Once the row maxima settle alpha is 1: skip the rescale then.
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (alpha[h] != 1.0) {
#pragma unroll
          for (int c = 0; c < NO; ++c) o[c][2 * h] *= alpha[h], o[c][2 * h + 1] *= alpha[h];
        }
#pragma unroll
      for (int n = 0; n < NS; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[n][e] = fexp2(s[n][e] - m_use[e / 2]);
          l_run[e / 2] += s[n][e];
        }

#pragma unroll
      for (int n = 0; n < NS; ++n) {
        // O += P V, one k8 step per 8-key group: the even keys 8n + 2t at
        // k = t and the odd keys at k = t + 4.
        const double* vrow = Vs + (8 * n + 2 * t) * LDV + g;
#pragma unroll
        for (int c = 0; c < NO; ++c)
          dmma16x8x8(o[c], s[n][0], s[n][2], s[n][1], s[n][3], vrow[8 * c], vrow[LDV + 8 * c]);
      }
    }
    cp_async_wait<0>();
  }

#pragma unroll
  for (int h = 0; h < 2; ++h) {
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 1);
    l_run[h] += __shfl_xor_sync(0xffffffffu, l_run[h], 2);
    const std::int64_t row = m0 + r0 + g + 8 * h;
    double orow[2 * NO];
#pragma unroll
    for (int c = 0; c < NO; ++c) {
      orow[2 * c] = o[c][2 * h];
      orow[2 * c + 1] = o[c][2 * h + 1];
    }
    if (row < a.M)
      store_row(p, w.off, w.bh, w.split, row, orow, m_run[h], l_run[h], 2 * t, 8, t == 0);
  }
}

}  // namespace strata::cuda
