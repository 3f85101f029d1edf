#pragma once
// The streaming (FlashAttention-2 style) kernel: a block owns BM query rows
// and DV output columns, walks its keys in BN-row tiles through shared
// memory, and keeps the online-softmax state (running max m, sum l, output
// accumulator) in registers. It never stores an M x N matrix: the only
// score storage is one BM x BN tile of P in shared memory for P V.
//
// Thread layout: RG x CG threads; thread (ty, tx) owns query rows
// ty + RG*i (i < TM), score columns tx + CG*j (j < TN) and output vector
// chunks tx + CG*g (g < OCH). The CG threads of a row are adjacent lanes of
// one warp, so row maxima reduce with xor shuffles.
#include "cuda/attention/common/row_softmax.cuh"
#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

// MINB_: resident blocks per SM promised to __launch_bounds__ (caps the
// registers at 64K / (NT * MINB)); 0 derives it from shared memory.
template <class T, int BM_, int BN_, int DK_, int DV_, int RG_, int CG_, int MINB_ = 2>
struct TiledConfig {
  using type = T;
  static constexpr int BM = BM_, BN = BN_, DK = DK_, DV = DV_, RG = RG_, CG = CG_;
  static constexpr int NT = RG * CG;
  static constexpr int VEC = Vec<T>::n;
  static constexpr int TM = BM / RG, TN = BN / CG;
  static constexpr int OCH = DV / VEC / CG;  // output vector chunks per thread
  // Rows padded by 16 bytes: with 128-byte multiples per row this puts the 8
  // rows a quarter warp reads in 8 different bank groups.
  static constexpr int LDK = DK + VEC, LDV = DV + VEC, LDP = BN + VEC;
  static constexpr std::size_t smem_bytes =
      std::size_t(BM * LDK + BN * LDK + BN * LDV + BM * LDP) * sizeof(T);
  static constexpr int MINB_smem = int((220u * 1024u) / smem_bytes);
  static constexpr int MINB = MINB_ > 0 ? MINB_ : MINB_smem<1 ? 1 : MINB_smem> 4 ? 4 : MINB_smem;
  static_assert(BM % RG == 0 && BN % CG == 0, "tile not divisible by thread grid");
  static_assert(DV % (VEC * CG) == 0 && OCH >= 1, "DV must split into vector chunks");
  static_assert(DK % VEC == 0 && BN % VEC == 0, "vector-aligned tiles");
  static_assert(CG <= 32 && 32 % CG == 0, "a row's threads must share a warp");
};

// Loads rows [r0, r0+ROWS) x cols [c0, c0+COLS) of a strided matrix into
// shared memory (row stride LD), zero outside [0, rmax) x [0, cmax).
// vec: 16-byte cp.async (the caller checked alignment and unit col stride);
// otherwise plain loads, with consecutive threads along the dimension of
// smaller stride so that column-major inputs stay coalesced.
// tvec: rows contiguous in memory (unit row stride, e.g. a column-major K)
// with 16-byte aligned columns: one 16-byte load brings VEC rows of one
// column; consecutive threads take consecutive columns (conflict-free stores).
template <class T, int ROWS, int COLS, int LD, int NT>
__device__ __forceinline__ void load_tile(T* sm, const T* g, std::int64_t rs, std::int64_t cs,
                                          std::int64_t r0, std::int64_t rmax, std::int64_t c0,
                                          std::int64_t cmax, bool vec, bool tvec = false) {
  using V = typename Vec<T>::type;
  constexpr int VEC = Vec<T>::n;
  if (tvec && !vec) {
    constexpr int RV = ROWS / VEC;
#pragma unroll 4
    for (int idx = threadIdx.x; idx < RV * COLS; idx += NT) {
      const int c = idx % COLS, rq = idx / COLS;
      const std::int64_t row = r0 + std::int64_t(rq) * VEC, col = c0 + c;
      T* dst = sm + (rq * VEC) * LD + c;
      if (col < cmax && row + VEC <= rmax && row % VEC == 0) {
        const V w = *reinterpret_cast<const V*>(g + row * rs + col * cs);
#pragma unroll
        for (int e = 0; e < VEC; ++e) dst[e * LD] = vget<T>(w, e);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e)
          dst[e * LD] = (col < cmax && row + e < rmax) ? g[(row + e) * rs + col * cs] : T(0);
      }
    }
  } else if (vec) {
    constexpr int CV = COLS / VEC;
#pragma unroll
    for (int idx = threadIdx.x; idx < ROWS * CV; idx += NT) {
      const int r = idx / CV, cv = idx % CV;
      const std::int64_t row = r0 + r, col = c0 + cv * VEC;
      const bool ok = row < rmax && col < cmax;
      cp_async16(sm + r * LD + cv * VEC, ok ? g + row * rs + col : g, ok ? 16 : 0);
    }
  } else if ((rs < 0 ? -rs : rs) < (cs < 0 ? -cs : cs)) {
    for (int idx = threadIdx.x; idx < ROWS * COLS; idx += NT) {
      const int r = idx % ROWS, c = idx / ROWS;
      const std::int64_t row = r0 + r, col = c0 + c;
      sm[r * LD + c] = (row < rmax && col < cmax) ? g[row * rs + col * cs] : T(0);
    }
  } else {
    for (int idx = threadIdx.x; idx < ROWS * COLS; idx += NT) {
      const int r = idx / COLS, c = idx % COLS;
      const std::int64_t row = r0 + r, col = c0 + c;
      sm[r * LD + c] = (row < rmax && col < cmax) ? g[row * rs + col * cs] : T(0);
    }
  }
}

// s[i][j] += Q[row_i, 0:kend] . K[col_j, 0:kend] from shared memory.
template <class C, bool FULL>
__device__ __forceinline__ void score_accumulate(typename C::type (&s)[C::TM][C::TN],
                                                 const typename C::type* Qs,
                                                 const typename C::type* Ks, int ty, int tx,
                                                 int kend) {
  using T = typename C::type;
  using V = typename Vec<T>::type;
  constexpr int VEC = C::VEC;
  const int bound = FULL ? C::DK : kend;
#pragma unroll 2
  for (int kk = 0; kk < bound; kk += VEC) {
    V qa[C::TM], kb[C::TN];
#pragma unroll
    for (int i = 0; i < C::TM; ++i)
      qa[i] = *reinterpret_cast<const V*>(Qs + (ty + C::RG * i) * C::LDK + kk);
#pragma unroll
    for (int j = 0; j < C::TN; ++j)
      kb[j] = *reinterpret_cast<const V*>(Ks + (tx + C::CG * j) * C::LDK + kk);
#pragma unroll
    for (int e = 0; e < VEC; ++e)
#pragma unroll
      for (int i = 0; i < C::TM; ++i)
#pragma unroll
        for (int j = 0; j < C::TN; ++j)
          s[i][j] = fma(vget<T>(qa[i], e), vget<T>(kb[j], e), s[i][j]);
  }
}

template <class C>
__global__ void __launch_bounds__(C::NT, C::MINB) attn_tiled_kernel(const AttnParams p) {
  using T = typename C::type;
  using V = typename Vec<T>::type;
  constexpr int BM = C::BM, BN = C::BN, DK = C::DK, DV = C::DV, RG = C::RG, CG = C::CG;
  constexpr int TM = C::TM, TN = C::TN, OCH = C::OCH, VEC = C::VEC, NT = C::NT;
  constexpr int LDK = C::LDK, LDV = C::LDV, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh)
  allow_dependents();
  T* Qs = reinterpret_cast<T*>(smem_raw);
  T* Ks = Qs + BM * LDK;
  T* Vs = Ks + BN * LDK;
  T* Ps = Vs + BN * LDV;

  const AttentionArgs& a = p.a;
  const BlockWork<T> w = block_work<T, BM, BN>(p);
  const std::int64_t split = w.split, dc = w.dc, bh = w.bh, m0 = w.m0, row_last = w.row_last;
  const std::int64_t j_begin = w.j_begin, j_end = w.j_end;
  const HeadOffsets off = w.off;
  const T *qg = w.q, *kg = w.k, *vg = w.v;
  const void* mask_head = w.mask;

  const int tid = threadIdx.x, tx = tid % CG, ty = tid / CG;
  const std::int64_t c0v = dc * DV;

  const T sl2 = static_cast<T>(p.scale_log2);
  T m_run[TM], l_run[TM], o[TM][OCH * VEC];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    m_run[i] = neg_inf<T>();
    l_run[i] = 0;
#pragma unroll
    for (int c = 0; c < OCH * VEC; ++c) o[i][c] = 0;
  }

  const int nc = static_cast<int>((a.d + DK - 1) / DK);
  const bool resident = nc == 1;  // Q stays in shared memory; K prefetched a tile ahead
  const int kend_last = static_cast<int>(((a.d - std::int64_t(nc - 1) * DK) + VEC - 1) / VEC * VEC);

  if (j_begin < j_end) {
    if (resident) {
      load_tile<T, BM, DK, LDK, NT>(Qs, qg, attn::row_stride(a.q), attn::col_stride(a.q), m0, a.M,
                                    0, a.d, p.q_vec, p.q_tvec);
      load_tile<T, BN, DK, LDK, NT>(Ks, kg, attn::row_stride(a.k), attn::col_stride(a.k), j_begin,
                                    j_end, 0, a.d, p.k_vec, p.k_tvec);
      cp_async_commit();
    }
    for (std::int64_t j0 = j_begin; j0 < j_end; j0 += BN) {
      T s[TM][TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) s[i][j] = 0;

      if (resident) {
        cp_async_wait<0>();
        __syncthreads();
        load_tile<T, BN, DV, LDV, NT>(Vs, vg, attn::row_stride(a.v), attn::col_stride(a.v), j0,
                                      j_end, c0v, a.dv, p.v_vec, p.v_tvec);
        cp_async_commit();
        if (kend_last == DK)
          score_accumulate<C, true>(s, Qs, Ks, ty, tx, DK);
        else
          score_accumulate<C, false>(s, Qs, Ks, ty, tx, kend_last);
        __syncthreads();
        if (j0 + BN < j_end)
          load_tile<T, BN, DK, LDK, NT>(Ks, kg, attn::row_stride(a.k), attn::col_stride(a.k),
                                        j0 + BN, j_end, 0, a.d, p.k_vec, p.k_tvec);
        cp_async_commit();
      } else {
        load_tile<T, BN, DV, LDV, NT>(Vs, vg, attn::row_stride(a.v), attn::col_stride(a.v), j0,
                                      j_end, c0v, a.dv, p.v_vec, p.v_tvec);
        cp_async_commit();
        for (int c = 0; c < nc; ++c) {
          load_tile<T, BM, DK, LDK, NT>(Qs, qg, attn::row_stride(a.q), attn::col_stride(a.q), m0,
                                        a.M, std::int64_t(c) * DK, a.d, p.q_vec);
          load_tile<T, BN, DK, LDK, NT>(Ks, kg, attn::row_stride(a.k), attn::col_stride(a.k), j0,
                                        j_end, std::int64_t(c) * DK, a.d, p.k_vec);
          cp_async_commit();
          cp_async_wait<0>();
          __syncthreads();
          if (c + 1 < nc || kend_last == DK)
            score_accumulate<C, true>(s, Qs, Ks, ty, tx, DK);
          else
            score_accumulate<C, false>(s, Qs, Ks, ty, tx, kend_last);
          __syncthreads();
        }
      }

      // Scores to base 2 with masks; whole tiles inside the band skip the tests.
      const bool full = p.mask_kind == kMaskNone && j0 + BN <= j_end &&
                        j0 >= row_last + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const std::int64_t row = m0 + ty + RG * i;
        const T tmax = scale_mask_row<T, TN, CG>(p, mask_head, full, sl2, row, j0, j_end, tx, s[i]);
        const T m_use = rescale_row(tmax, m_run[i], l_run[i], o[i]);
        T ls = 0;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          const T pj = fexp2(s[i][j] - m_use);
          ls += pj;
          Ps[(ty + RG * i) * LDP + tx + CG * j] = pj;
        }
        l_run[i] += ls;
      }

      if (resident)
        cp_async_wait<1>();  // V of this tile; the next K may still be in flight
      else
        cp_async_wait<0>();
      __syncthreads();
#pragma unroll 2
      for (int jj = 0; jj < BN; jj += VEC) {
        V pv[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i)
          pv[i] = *reinterpret_cast<const V*>(Ps + (ty + RG * i) * LDP + jj);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          V vv[OCH];
#pragma unroll
          for (int g = 0; g < OCH; ++g)
            vv[g] = *reinterpret_cast<const V*>(Vs + (jj + e) * LDV + (tx + CG * g) * VEC);
#pragma unroll
          for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int g = 0; g < OCH; ++g)
#pragma unroll
              for (int c = 0; c < VEC; ++c)
                o[i][g * VEC + c] = fma(vget<T>(pv[i], e), vget<T>(vv[g], c), o[i][g * VEC + c]);
        }
      }
      if (!resident) __syncthreads();
    }
    cp_async_wait<0>();
  }

  sum_over_row_lanes<CG>(l_run);

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::int64_t row = m0 + ty + RG * i;
    if (row < a.M)
      store_row(p, off, bh, split, row, o[i], m_run[i], l_run[i], c0v + VEC * tx, VEC * CG,
                tx == 0 && dc == 0);
  }
}

}  // namespace strata::cuda
