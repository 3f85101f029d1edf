#pragma once
// The streaming kernel with transposed shared-memory tiles ("t"): Q^T, K^T
// and P^T are stored with the query/key index contiguous, so a thread reads
// 4 (f32) consecutive rows or columns with one 16-byte load per head-dim
// step and its register tile can be 8 x 8 with only 16 fragment registers.
// Compared with attention_tiled.cuh (natural layouts, 16-byte loads along
// the head dim) this halves the shared loads per FFMA at 8 x 8 tiles.
//
// Thread (ty, tx) of the RG x CG grid owns query rows
//   4*ty + 4*RG*a + e   (a < TM/4, e < 4),
// score columns 4*tx + 4*CG*b + e (b < TN/4) and output columns
// 4*tx + 4*CG*g + e (g < DV/(4*CG)); the CG threads of a row are adjacent
// lanes, so row maxima reduce with xor shuffles.
//
// Q^T is loaded once (d <= DK: this kernel serves only such calls). K tiles
// go global -> registers (issued before Q K^T of the previous tile, so the
// load latency hides behind it) -> K^T in shared memory. V tiles use
// cp.async into their natural layout, fetched during Q K^T.
#include "cuda/attention_common.cuh"
#include "cuda/attention_tiled.cuh"  // load_tile for V

namespace strata::cuda {

template <class T, int BM_, int BN_, int DK_, int DV_, int RG_, int CG_, int MINB_>
struct TiledTConfig {
  using type = T;
  static constexpr int BM = BM_, BN = BN_, DK = DK_, DV = DV_, RG = RG_, CG = CG_;
  static constexpr int NT = RG * CG, MINB = MINB_;
  static constexpr int G = Vec<T>::n;  // elements per 16-byte access
  static constexpr int TM = BM / RG, TN = BN / CG, TNO = DV / CG;
  static constexpr int LDQ = BM + G, LDK = BN + G, LDV = DV + G, LDP = BM + G;
  static constexpr int KE = BN * DK / NT;  // K elements staged per thread
  static constexpr std::size_t smem_bytes =
      std::size_t(DK * LDQ + DK * LDK + BN * LDV + BN * LDP) * sizeof(T);
  static_assert(TM % G == 0 && TN % G == 0 && TNO % G == 0, "register tiles in 16-byte groups");
  static_assert(BM == RG * TM && BN == CG * TN && DV == CG * TNO, "tiles cover the block");
  static_assert((BN * DK) % (NT * G) == 0, "K tile splits evenly over threads");
  static_assert(CG <= 32 && 32 % CG == 0, "a row's threads must share a warp");
};

// Stages a K tile (keys [j0, j0+BN) x head dims [0, DK)) in registers:
// group s of G elements is key idx % BN, head dims G*(idx / BN) + [0, G),
// idx = thread + NT*s. Consecutive threads take consecutive keys, so the
// transposed stores hit distinct banks and a key-contiguous (column-major) K
// still loads coalesced. vec: 16-byte loads along d (d-contiguous rows).
template <class C>
__device__ __forceinline__ void k_fetch(typename C::type (&kr)[C::KE], const typename C::type* kg,
                                        std::int64_t ns, std::int64_t ds, std::int64_t j0,
                                        std::int64_t j_end, std::int64_t d, bool vec) {
  using T = typename C::type;
  using V = typename Vec<T>::type;
  constexpr int G = C::G, BN = C::BN, NT = C::NT;
#pragma unroll
  for (int s = 0; s < C::KE / G; ++s) {
    const int idx = threadIdx.x + NT * s;
    const int key = idx % BN, dq = idx / BN;
    const std::int64_t j = j0 + key, c = std::int64_t(dq) * G;
    if (vec) {
      V w;
      if (j < j_end && c < d) {
        w = *reinterpret_cast<const V*>(kg + j * ns + c);
      } else {
        w = V{};
      }
#pragma unroll
      for (int e = 0; e < G; ++e) kr[s * G + e] = vget<T>(w, e);
    } else {
#pragma unroll
      for (int e = 0; e < G; ++e)
        kr[s * G + e] = (j < j_end && c + e < d) ? kg[j * ns + (c + e) * ds] : T(0);
    }
  }
}

// Writes the staged K tile into K^T [DK][LDK] (mapping of k_fetch).
template <class C>
__device__ __forceinline__ void k_store(const typename C::type (&kr)[C::KE], typename C::type* Kt) {
  constexpr int G = C::G, BN = C::BN, NT = C::NT, LDK = C::LDK;
#pragma unroll
  for (int s = 0; s < C::KE / G; ++s) {
    const int idx = threadIdx.x + NT * s;
    const int key = idx % BN, dq = idx / BN;
#pragma unroll
    for (int e = 0; e < G; ++e) Kt[(dq * G + e) * LDK + key] = kr[s * G + e];
  }
}

template <class C>
__global__ void __launch_bounds__(C::NT, C::MINB) attn_tiled_t_kernel(const AttnParams p) {
  using T = typename C::type;
  using V = typename Vec<T>::type;
  constexpr int BM = C::BM, BN = C::BN, DK = C::DK, DV = C::DV, RG = C::RG, CG = C::CG;
  constexpr int TM = C::TM, TN = C::TN, TNO = C::TNO, G = C::G, NT = C::NT;
  constexpr int LDQ = C::LDQ, LDK = C::LDK, LDV = C::LDV, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Qt = reinterpret_cast<T*>(smem_raw);  // [DK][LDQ]
  T* Kt = Qt + DK * LDQ;                   // [DK][LDK]
  T* Vs = Kt + DK * LDK;                   // [BN][LDV]
  T* Pt = Vs + BN * LDV;                   // [BN][LDP]

  const AttentionArgs& a = p.a;
  std::int64_t bid = blockIdx.x;
  const std::int64_t mt = bid % p.m_tiles;
  bid /= p.m_tiles;
  const std::int64_t split = bid % p.splits;
  bid /= p.splits;
  const std::int64_t dc = bid % p.dv_chunks;
  const std::int64_t bh = bid / p.dv_chunks;
  const HeadOffsets off = head_offsets(p, bh);
  const T* qg = static_cast<const T*>(a.q) + off.q;
  const T* kg = static_cast<const T*>(a.k) + off.k;
  const T* vg = static_cast<const T*>(a.v) + off.v;
  const void* mask_head = nullptr;
  if (p.mask_kind == kMaskBool) mask_head = static_cast<const unsigned char*>(a.mask) + off.mk;
  if (p.mask_kind == kMaskFloat) mask_head = static_cast<const T*>(a.mask) + off.mk;

  const int tid = threadIdx.x, tx = tid % CG, ty = tid / CG;
  const std::int64_t m0 = mt * BM;
  const std::int64_t row_last = min(m0 + BM, a.M) - 1;
  const std::int64_t c0v = dc * DV;
  std::int64_t j_begin = split * p.keys_per_split;
  std::int64_t j_end = min(a.N, j_begin + p.keys_per_split);
  // Start on a tile boundary (keys before the band are masked per element),
  // which keeps 16-byte alignment for key-contiguous K.
  j_begin = max(j_begin, (m0 + a.band_lo) / BN * BN);
  j_end = min(j_end, row_last + a.band_hi + 1);

  const T sl2 = static_cast<T>(p.scale_log2);
  T m_run[TM], l_run[TM], o[TM][TNO];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    m_run[i] = neg_inf<T>();
    l_run[i] = 0;
#pragma unroll
    for (int c = 0; c < TNO; ++c) o[i][c] = 0;
  }
  const int kend = static_cast<int>((a.d + G - 1) / G * G);

  if (j_begin < j_end) {
    // Q^T, once: consecutive threads take consecutive rows (conflict-free stores).
    if (p.q_vec) {
      for (int idx = tid; idx < BM * DK / G; idx += NT) {
        const int r = idx % BM, cq = idx / BM;
        const std::int64_t row = m0 + r, c = std::int64_t(cq) * G;
        V w;
        T* wp = reinterpret_cast<T*>(&w);
        if (row < a.M && c < a.d) {
          w = *reinterpret_cast<const V*>(qg + row * a.q_ms + c);
        } else {
#pragma unroll
          for (int e = 0; e < G; ++e) wp[e] = 0;
        }
#pragma unroll
        for (int e = 0; e < G; ++e) Qt[(cq * G + e) * LDQ + r] = wp[e];
      }
    } else {
      for (int idx = tid; idx < BM * DK; idx += NT) {
        const int r = idx % BM, c = idx / BM;
        const std::int64_t row = m0 + r;
        Qt[c * LDQ + r] =
            (row < a.M && c < a.d) ? qg[row * a.q_ms + std::int64_t(c) * a.q_ds] : T(0);
      }
    }
    T kr[C::KE];
    k_fetch<C>(kr, kg, a.k_ns, a.k_ds, j_begin, j_end, a.d, p.k_vec);
    k_store<C>(kr, Kt);
    __syncthreads();

    for (std::int64_t j0 = j_begin; j0 < j_end; j0 += BN) {
      load_tile<T, BN, DV, LDV, NT>(Vs, vg, a.v_ns, a.v_ds, j0, j_end, c0v, a.dv, p.v_vec,
                                    p.v_tvec);
      cp_async_commit();
      const bool more = j0 + BN < j_end;
      if (more) k_fetch<C>(kr, kg, a.k_ns, a.k_ds, j0 + BN, j_end, a.d, p.k_vec);

      T s[TM][TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) s[i][j] = 0;
#pragma unroll 2
      for (int kk = 0; kk < kend; ++kk) {
        V qa[TM / G], kb[TN / G];
#pragma unroll
        for (int x = 0; x < TM / G; ++x)
          qa[x] = *reinterpret_cast<const V*>(Qt + kk * LDQ + G * ty + G * RG * x);
#pragma unroll
        for (int x = 0; x < TN / G; ++x)
          kb[x] = *reinterpret_cast<const V*>(Kt + kk * LDK + G * tx + G * CG * x);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j)
            s[i][j] = fma(vget<T>(qa[i / G], i % G), vget<T>(kb[j / G], j % G), s[i][j]);
      }

      const bool full = p.mask_kind == kMaskNone && j0 >= j_begin && j0 + BN <= j_end &&
                        j0 >= row_last + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const std::int64_t row = m0 + G * ty + G * RG * (i / G) + i % G;
        T tmax = neg_inf<T>();
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          T x = s[i][j] * sl2;
          if (!full) {
            const std::int64_t col = j0 + G * tx + G * CG * (j / G) + j % G;
            T bias = 0;
            const bool kept =
                row < a.M && col < j_end && key_kept<T>(p, mask_head, row, col, &bias);
            x = kept ? x + bias : neg_inf<T>();
          }
          s[i][j] = x;
          tmax = fmax_(tmax, x);
        }
#pragma unroll
        for (int sh = CG / 2; sh > 0; sh >>= 1)
          tmax = fmax_(tmax, __shfl_xor_sync(0xffffffffu, tmax, sh));
        const T m_new = fmax_(m_run[i], tmax);
        // The guard only picks the exponent base; m_run keeps the true max.
        const T m_use = m_new == neg_inf<T>() ? T(0) : m_new;
        const T alpha = fexp2(m_run[i] - m_use);
        m_run[i] = m_new;
        l_run[i] *= alpha;
#pragma unroll
        for (int c = 0; c < TNO; ++c) o[i][c] *= alpha;
        T ls = 0;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          s[i][j] = fexp2(s[i][j] - m_use);
          ls += s[i][j];
        }
        l_run[i] += ls;
      }
      // P^T: one 16-byte store per (column, row group).
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int col = G * tx + G * CG * (j / G) + j % G;
#pragma unroll
        for (int x = 0; x < TM / G; ++x) {
          V w;
          T* wp = reinterpret_cast<T*>(&w);
#pragma unroll
          for (int e = 0; e < G; ++e) wp[e] = s[x * G + e][j];
          *reinterpret_cast<V*>(Pt + col * LDP + G * ty + G * RG * x) = w;
        }
      }
      cp_async_wait<0>();
      __syncthreads();  // P^T and V visible; every thread is done with K^T
      if (more) k_store<C>(kr, Kt);
#pragma unroll 2
      for (int jj = 0; jj < BN; ++jj) {
        V pa[TM / G], vb[TNO / G];
#pragma unroll
        for (int x = 0; x < TM / G; ++x)
          pa[x] = *reinterpret_cast<const V*>(Pt + jj * LDP + G * ty + G * RG * x);
#pragma unroll
        for (int x = 0; x < TNO / G; ++x)
          vb[x] = *reinterpret_cast<const V*>(Vs + jj * LDV + G * tx + G * CG * x);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int c = 0; c < TNO; ++c)
            o[i][c] = fma(vget<T>(pa[i / G], i % G), vget<T>(vb[c / G], c % G), o[i][c]);
      }
      __syncthreads();  // K^T written; P^T and V free for the next tile
    }
  }

#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int sh = CG / 2; sh > 0; sh >>= 1) l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], sh);

  const bool final_out = p.splits == 1;
  T* outg = static_cast<T*>(a.out) + off.o;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::int64_t row = m0 + G * ty + G * RG * (i / G) + i % G;
    if (row >= a.M) continue;
    const T l = l_run[i];
    const T inv = final_out ? (l == T(0) ? T(0) : T(1) / l) : T(1);
    T* dst;
    std::int64_t cs;
    bool vec_ok;
    if (final_out) {
      dst = outg + row * a.o_ms;
      cs = a.o_ds;
      vec_ok = p.o_vec;
    } else {
      const std::int64_t r = (split * p.bh + bh) * a.M + row;
      dst = static_cast<T*>(p.part_acc) + r * a.dv;
      cs = 1;
      vec_ok = (a.dv % G) == 0;
    }
#pragma unroll
    for (int g = 0; g < TNO / G; ++g) {
      const std::int64_t col = c0v + G * tx + G * CG * g;
      if (vec_ok && col + G <= a.dv) {
        V w;
        T* wp = reinterpret_cast<T*>(&w);
#pragma unroll
        for (int e = 0; e < G; ++e) wp[e] = o[i][g * G + e] * inv;
        *reinterpret_cast<V*>(dst + col) = w;
      } else {
#pragma unroll
        for (int e = 0; e < G; ++e)
          if (col + e < a.dv) dst[(col + e) * cs] = o[i][g * G + e] * inv;
      }
    }
    if (tx == 0 && dc == 0) {
      if (final_out) {
        if (a.lse) {
          const T lse =
              l == T(0) ? neg_inf<T>() : (m_run[i] + flog2(l)) * static_cast<T>(0.6931471805599453);
          static_cast<T*>(a.lse)[off.l + row * a.l_ms] = lse;
        }
      } else {
        const std::int64_t r = (split * p.bh + bh) * a.M + row;
        static_cast<T*>(p.part_ml)[2 * r] = m_run[i];
        static_cast<T*>(p.part_ml)[2 * r + 1] = l;
      }
    }
  }
}

}  // namespace strata::cuda
