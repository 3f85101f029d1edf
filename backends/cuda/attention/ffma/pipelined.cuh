#pragma once
// The pipelined streaming kernel (f32): FlashAttention-2 style like
// ffma/tiled.cuh, but every global -> shared copy is asynchronous and
// runs STAGES - 1 chunks ahead of the arithmetic, so a block never waits for
// its own loads, and the register tiles are 8 rows x 4 keys (Q K^T) and
// 8 rows x 8 (or 4) output columns (P V).
//
// The keys of one tile are consumed as a stream of equal-sized chunks
// through a ring of shared buffers: first the K tile in head-dim slices of
// KC columns (S += Q[:, slice] K[:, slice]^T), then the V tile in slices of
// VC keys (O += P[:, slice] V[slice, :]). One barrier per chunk both
// publishes the chunk and frees the buffer the next copy overwrites.
//
// Layouts in shared memory, all natural (row = query or key):
//   Q  [BM][DK+4]   resident for the whole block
//   K  [BN][KC+4]   per chunk; a warp's 16 key rows fall in distinct bank groups
//   V  [VC][DV+4]   per chunk
//   P^T[BN][BM+4]   written once per tile as 16-byte groups of 4 rows
// Thread (ty, tx) of the RG x CG grid owns query rows 4*ty + 4*RG*a + e
// (e < 4), keys tx + CG*j of each tile, and output columns
// 4*tx + 4*CG*g + e. The CG threads of a row are adjacent lanes, so row
// maxima reduce with xor shuffles.
//
// Inputs with a unit last-dim stride and 16-byte alignment are copied with
// 16-byte cp.async; any other layout (column-major K, odd strides) with
// 4-byte cp.async in 8-row x 4-column warp tiles, which keeps both the
// global reads (32-byte runs along either dimension) and the shared stores
// (bank 4*row + col) efficient. Out-of-range rows and columns are zero-filled
// by the copy itself.
#include "cuda/attention/common/row_softmax.cuh"
#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

template <int BM_, int BN_, int DK_, int DV_, int RG_, int CG_, int KC_, int STAGES_, int MINB_,
          int UNROLL_ = 0>
struct PipeConfig {
  using type = float;
  static constexpr int BM = BM_, BN = BN_, DK = DK_, DV = DV_, RG = RG_, CG = CG_;
  static constexpr int KC = KC_, STAGES = STAGES_, MINB = MINB_;
  // Steps of the chunk loops unrolled (0: all): the hot loops must stay
  // small enough for the instruction caches.
  static constexpr int UK = UNROLL_ > 0 ? UNROLL_ : KC / 4;
  static constexpr int UV = UNROLL_ > 0 ? UNROLL_ : KC* BN / DV;
  static constexpr int NT = RG * CG, NW = NT / 32;
  static constexpr int TM = BM / RG, TN = BN / CG, TNO = DV / CG;
  static constexpr int VC = KC * BN / DV;  // keys per V chunk: as many floats as a K chunk
  static constexpr int NVC = BN / VC;      // V chunks per tile
  static constexpr int LDQ = DK + 4, LDK = KC + 4, LDV = DV + 4, LDP = BM + 4;
  static constexpr int STAGE = BN * LDK > VC* LDV ? BN* LDK : VC* LDV;  // floats per buffer
  static constexpr std::size_t smem_bytes =
      std::size_t(BM * LDQ + BN * LDP + STAGES * STAGE) * sizeof(float);
  static_assert(TM % 4 == 0 && TNO % 4 == 0, "rows and output columns in groups of 4");
  static_assert(BM == RG * TM && BN == CG * TN && DV == 4 * CG * (TNO / 4),
                "tiles cover the block");
  static_assert(NT % 32 == 0 && CG <= 32 && 32 % CG == 0, "a row's threads share a warp");
  static_assert(DK % KC == 0 && KC % 4 == 0 && (KC * BN) % DV == 0 && BN % VC == 0,
                "chunks split the tiles");
  static_assert(BM % 8 == 0 && BN % 8 == 0 && VC % 8 == 0, "8-row copy tiles");
  static_assert(STAGES >= 2, "at least one chunk in flight");
};

// Copies rows [r0, r0+ROWS) x cols [c0, c0+COLS) of a strided matrix into
// sm[ROWS][LD] asynchronously, zero outside [0, rmax) x [0, cmax). vec: the
// caller checked unit column stride, 16-byte alignment and cmax % 4 == 0.
template <int ROWS, int COLS, int LD, int NT>
__device__ __forceinline__ void cp_async_rows(float* sm, const float* g, std::int64_t rs,
                                              std::int64_t cs, std::int64_t r0, std::int64_t rmax,
                                              std::int64_t c0, std::int64_t cmax, bool vec) {
  if (vec) {
    constexpr int CV = COLS / 4, N = ROWS * CV;
    static_assert(N % NT == 0, "16-byte copies split evenly over threads");
#pragma unroll
    for (int s = 0; s < N / NT; ++s) {
      const int idx = threadIdx.x + NT * s;
      const int r = idx / CV, cv = idx % CV;
      const std::int64_t row = r0 + r, col = c0 + 4 * cv;
      const bool ok = row < rmax && col < cmax;
      cp_async16(sm + r * LD + 4 * cv, ok ? g + row * rs + col : g, ok ? 16 : 0);
    }
  } else {
    constexpr int RT = ROWS / 8, N = RT * (COLS / 4), NW = NT / 32;
    static_assert(COLS % 4 == 0 && N % NW == 0, "warp tiles split evenly over warps");
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
#pragma unroll 4
    for (int s = 0; s < N / NW; ++s) {
      const int t = w + NW * s;
      const int r = (t % RT) * 8 + lane % 8, c = (t / RT) * 4 + lane / 8;
      const std::int64_t row = r0 + r, col = c0 + c;
      const bool ok = row < rmax && col < cmax;
      cp_async4(sm + r * LD + c, ok ? g + row * rs + col * cs : g, ok ? 4 : 0);
    }
  }
}

// s[i][j] += Q[row_i, 0:klen] . K[key_j, 0:klen] for one head-dim chunk.
template <class C, int KLEN>
__device__ __forceinline__ void score_chunk(float (&s)[C::TM][C::TN], const float* Qc,
                                            const float* Kc, int ty, int tx, int klen) {
  const int bound = KLEN > 0 ? KLEN : klen;
#pragma unroll(C::UK)
  for (int kk = 0; kk < bound; kk += 4) {
    float4 qa[C::TM], kb[C::TN];
#pragma unroll
    for (int i = 0; i < C::TM; ++i)
      qa[i] = *reinterpret_cast<const float4*>(
          Qc + (4 * ty + 4 * C::RG * (i / 4) + i % 4) * C::LDQ + kk);
#pragma unroll
    for (int j = 0; j < C::TN; ++j)
      kb[j] = *reinterpret_cast<const float4*>(Kc + (tx + C::CG * j) * C::LDK + kk);
#pragma unroll
    for (int i = 0; i < C::TM; ++i)
#pragma unroll
      for (int j = 0; j < C::TN; ++j) {
        s[i][j] = fmaf(qa[i].x, kb[j].x, s[i][j]);
        s[i][j] = fmaf(qa[i].y, kb[j].y, s[i][j]);
        s[i][j] = fmaf(qa[i].z, kb[j].z, s[i][j]);
        s[i][j] = fmaf(qa[i].w, kb[j].w, s[i][j]);
      }
  }
}

// o[i][c] += P^T[key, row_i] V[key, col_c] over the VC keys of one chunk.
template <class C>
__device__ __forceinline__ void pv_chunk(float (&o)[C::TM][C::TNO], const float* Pc,
                                         const float* Vc, int ty, int tx) {
#pragma unroll(C::UV)
  for (int jj = 0; jj < C::VC; ++jj) {
    float4 pa[C::TM / 4], vb[C::TNO / 4];
#pragma unroll
    for (int x = 0; x < C::TM / 4; ++x)
      pa[x] = *reinterpret_cast<const float4*>(Pc + jj * C::LDP + 4 * ty + 4 * C::RG * x);
#pragma unroll
    for (int g = 0; g < C::TNO / 4; ++g)
      vb[g] = *reinterpret_cast<const float4*>(Vc + jj * C::LDV + 4 * tx + 4 * C::CG * g);
#pragma unroll
    for (int i = 0; i < C::TM; ++i)
#pragma unroll
      for (int c = 0; c < C::TNO; ++c)
        o[i][c] = fmaf(vget<float>(pa[i / 4], i % 4), vget<float>(vb[c / 4], c % 4), o[i][c]);
  }
}

template <class C>
__global__ void __launch_bounds__(C::NT, C::MINB) attn_pipe_kernel(const AttnParams p) {
  constexpr int BM = C::BM, BN = C::BN, DK = C::DK, DV = C::DV, RG = C::RG, CG = C::CG;
  constexpr int TM = C::TM, TN = C::TN, TNO = C::TNO, NT = C::NT, KC = C::KC, VC = C::VC;
  constexpr int NVC = C::NVC, STAGES = C::STAGES, STAGE = C::STAGE;
  constexpr int LDQ = C::LDQ, LDK = C::LDK, LDV = C::LDV, LDP = C::LDP;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  grid_dependency_wait();  // launched with PDL (pdl_launch.cuh)
  allow_dependents();
  float* Qs = reinterpret_cast<float*>(smem_raw);  // [BM][LDQ]
  float* Pt = Qs + BM * LDQ;                       // [BN][LDP]
  float* ring = Pt + BN * LDP;                     // STAGES x STAGE

  const AttentionArgs& a = p.a;
  const BlockWork<float> w = block_work<float, BM, BN>(p);  // dv_chunks == 1: DV covers dv
  const std::int64_t split = w.split, bh = w.bh, m0 = w.m0, row_last = w.row_last;
  const std::int64_t j_begin = w.j_begin, j_end = w.j_end;
  const HeadOffsets off = w.off;
  const float *qg = w.q, *kg = w.k, *vg = w.v;
  const void* mask_head = w.mask;

  const int tid = threadIdx.x, tx = tid % CG, ty = tid / CG;

  const float sl2 = static_cast<float>(p.scale_log2);
  float m_run[TM], l_run[TM], o[TM][TNO];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    m_run[i] = neg_inf<float>();
    l_run[i] = 0;
#pragma unroll
    for (int c = 0; c < TNO; ++c) o[i][c] = 0;
  }

  if (j_begin < j_end) {
    const int nkc = static_cast<int>((a.d + KC - 1) / KC);  // K chunks per tile
    const int cpt = nkc + NVC;                              // chunks per tile
    const int n_tiles = static_cast<int>((j_end - j_begin + BN - 1) / BN);
    const int total = n_tiles * cpt;
    // Head dims of the last K chunk, rounded up to 4 (the copy zero-fills).
    const int klast = static_cast<int>((a.d - std::int64_t(nkc - 1) * KC + 3) / 4 * 4);

    cp_async_rows<BM, DK, LDQ, NT>(Qs, qg, attn::row_stride(a.q), attn::col_stride(a.q), m0, a.M, 0,
                                   a.d, p.q_vec);
    // The copy stream: chunk `iq` is (tile it, index ir within the tile).
    int iq = 0, it = 0, ir = 0;
    float* ibuf = ring;
    auto issue_next = [&]() {
      if (iq < total) {
        const std::int64_t j0 = j_begin + std::int64_t(it) * BN;
        if (ir < nkc)
          cp_async_rows<BN, KC, LDK, NT>(ibuf, kg, attn::row_stride(a.k), attn::col_stride(a.k), j0,
                                         j_end, std::int64_t(ir) * KC, a.d, p.k_vec);
        else
          cp_async_rows<VC, DV, LDV, NT>(ibuf, vg, attn::row_stride(a.v), attn::col_stride(a.v),
                                         j0 + std::int64_t(ir - nkc) * VC, j_end, 0, a.dv, p.v_vec);
        ++iq;
        if (++ir == cpt) ir = 0, ++it;
        ibuf = (iq % STAGES) == 0 ? ring : ibuf + STAGE;
      }
      cp_async_commit();  // empty groups keep the wait count uniform
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) issue_next();  // Q travels with chunk 0

    const float* cbuf = ring;  // buffer of the chunk being consumed
    int cq = 0;
    auto next_chunk = [&]() {
      cp_async_wait<STAGES - 2>();
      __syncthreads();  // chunk cq visible to all; chunk cq - 1's buffer free
      issue_next();
    };
    auto advance = [&]() {
      ++cq;
      cbuf = (cq % STAGES) == 0 ? ring : cbuf + STAGE;
    };

    for (int t = 0; t < n_tiles; ++t) {
      const std::int64_t j0 = j_begin + std::int64_t(t) * BN;
      float s[TM][TN];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) s[i][j] = 0;
      for (int r = 0; r < nkc; ++r) {
        next_chunk();
        if (r + 1 < nkc || klast == KC)
          score_chunk<C, KC>(s, Qs + r * KC, cbuf, ty, tx, KC);
        else
          score_chunk<C, 0>(s, Qs + r * KC, cbuf, ty, tx, klast);
        advance();
      }

      // Scores to base 2 with masks; whole tiles inside the band skip the tests.
      const bool full = p.mask_kind == kMaskNone && j0 + BN <= j_end &&
                        j0 >= row_last + a.band_lo && j0 + BN - 1 <= m0 + a.band_hi;
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const std::int64_t row = m0 + 4 * ty + 4 * RG * (i / 4) + i % 4;
        const float tmax =
            scale_mask_row<float, TN, CG>(p, mask_head, full, sl2, row, j0, j_end, tx, s[i]);
        const float m_use = rescale_row(tmax, m_run[i], l_run[i], o[i]);
        float ls = 0;
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          s[i][j] = fexp2(s[i][j] - m_use);
          ls += s[i][j];
        }
        l_run[i] += ls;
      }
      // P^T: one 16-byte store per (key, group of 4 rows); the previous
      // tile's readers are past this tile's K-chunk barriers.
#pragma unroll
      for (int j = 0; j < TN; ++j)
#pragma unroll
        for (int x = 0; x < TM / 4; ++x)
          *reinterpret_cast<float4*>(Pt + (tx + CG * j) * LDP + 4 * ty + 4 * RG * x) =
              make_float4(s[4 * x][j], s[4 * x + 1][j], s[4 * x + 2][j], s[4 * x + 3][j]);

      for (int r = 0; r < NVC; ++r) {
        next_chunk();
        pv_chunk<C>(o, Pt + r * VC * LDP, cbuf, ty, tx);
        advance();
      }
    }
    cp_async_wait<0>();
  }

  sum_over_row_lanes<CG>(l_run);

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const std::int64_t row = m0 + 4 * ty + 4 * RG * (i / 4) + i % 4;
    if (row < a.M)
      store_row(p, off, bh, split, row, o[i], m_run[i], l_run[i], 4 * tx, 4 * CG, tx == 0);
  }
}

}  // namespace strata::cuda
