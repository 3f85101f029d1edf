#pragma once
// f32 softmax attention on the tensor cores with TF32 operands, the bf16
// kernel's structure (sm80/kernel_16bit.cuh) on mma.sync m16n8k8 .tf32
// (docs/log/cuda-tuning.md, "f32 on the tensor cores: TF32 and 3xTF32"):
//
// - medium (X3 = false): every operand rounded to TF32 (cvt.rna), one MMA
//   per product, f32 accumulation;
// - high (X3 = true): every operand split x = big + small, big = tf32(x),
//   small = tf32(x - big); a*b ~ a_small*b_big + a_big*b_small + a_big*b_big
//   (small terms first), which keeps products f32-accurate (3xTF32, as
//   CUTLASS and PyTorch's memory-efficient f32 attention do).
//
// Layout choices that follow from 32-bit elements:
// - tiles are [rows][D + 4] floats: the 16-byte pad puts the 8 rows one
//   ldmatrix phase reads in 8 different 16-byte bank groups, and the 2 x 4
//   rows x 8 columns one V fragment load reads in 32 different banks;
// - ldmatrix on f32: an 8 x 8 b16 matrix is 8 rows x 4 floats, and lane
//   (g = lane / 4, t = lane % 4) receives float (row g, column t), which is
//   the TF32 A fragment (a0 (g, t), a1 (g + 8, t), a2 (g, t + 4),
//   a3 (g + 8, t + 4)) of Q and the B fragment of K (b0 = K[key g][t],
//   b1 = K[key g][t + 4]) as they lie in shared memory;
// - P V without shuffles: the score accumulator gives lane (g, t) keys
//   2t and 2t + 1 of rows g and g + 8. The A operand of P V takes k = t as
//   key 2t and k = t + 4 as key 2t + 1 (a permutation of the sum), so
//   a = (c0, c2, c1, c3) and V's fragment is b0 = V[key 2t][col g],
//   b1 = V[key 2t + 1][col g]: two 32-bit shared loads.
//
// Masking, bands, lse and empty rows as in sm80/kernel_16bit.cuh: fully masked rows
// end with l = 0, out = 0, lse = -inf.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/common/flash_ops.cuh"
#include "cuda/attention/common/flash_softmax.cuh"
#include "cuda/attention/common/flash_tile.cuh"

namespace strata::cuda::flash {

// c += a * b, one m16n8k8 TF32 MMA.
__device__ __forceinline__ void mma_tf32(float* c, std::uint32_t a0, std::uint32_t a1,
                                         std::uint32_t a2, std::uint32_t a3, std::uint32_t b0,
                                         std::uint32_t b1) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// c += a * b for split operands (high): the two small cross terms first,
// then the big product, summed by the tensor core into a zeroed t that is
// then added to c in f32 (round to nearest); the big product alone
// (medium). The tensor core's own accumulation truncates: with the three
// MMAs accumulating straight into c, each step cut the running sum (up to
// the whole row of P V) to 24 bits toward zero, and high's error came out
// several times exact f32's, outside the f32 bound; accumulating each
// k-step apart and adding in f32 is how the tensor-core f32 emulations
// recover f32 accuracy (docs/log/cuda-tuning.md, "Run 3 of session 9").
template <bool X3>
__device__ __forceinline__ void mma_split(float* c, const Tf32<X3>* a, const Tf32<X3>& b0,
                                          const Tf32<X3>& b1) {
  if constexpr (X3) {
    float t[4] = {0.f, 0.f, 0.f, 0.f};
    mma_tf32(t, a[0].small, a[1].small, a[2].small, a[3].small, b0.big, b1.big);
    mma_tf32(t, a[0].big, a[1].big, a[2].big, a[3].big, b0.small, b1.small);
    mma_tf32(t, a[0].big, a[1].big, a[2].big, a[3].big, b0.big, b1.big);
#pragma unroll
    for (int i = 0; i < 4; ++i) c[i] += t[i];
  } else {
    mma_tf32(c, a[0].big, a[1].big, a[2].big, a[3].big, b0.big, b1.big);
  }
}

// c += a * b with every MMA of a split product accumulated straight into c
// (truncating): the inside of a group that mma_split's zeroed quad, or the
// kernel's group accumulators, sum apart (flash_tf32_kernel's GS and GP).
template <bool X3>
__device__ __forceinline__ void mma_chain(float* c, const Tf32<X3>* a, const Tf32<X3>& b0,
                                          const Tf32<X3>& b1) {
  if constexpr (X3) {
    mma_tf32(c, a[0].small, a[1].small, a[2].small, a[3].small, b0.big, b1.big);
    mma_tf32(c, a[0].big, a[1].big, a[2].big, a[3].big, b0.small, b1.small);
  }
  mma_tf32(c, a[0].big, a[1].big, a[2].big, a[3].big, b0.big, b1.big);
}

// Threads: BM / 16 warps, 16 query rows each. Tiles are [rows][kPitch].
template <int D, int BM>
struct Tf32Config {
  static constexpr int kWarps = BM / 16;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kPitch = D + 4;   // floats per shared row
  static constexpr int kChunks = D / 4;  // 16-byte chunks per row
};

// Copies rows [0, rows) x chunks [0, cols / 4) of a [ROWS][D] f32 tile from
// global (row stride rs elements) into a [ROWS][D + 4] shared tile; the
// rest of the tile (past `rows`, past `cols`) is zeroed.
template <int D, int ROWS, int THREADS>
__device__ __forceinline__ void load_tile_f32(std::uint32_t dst, const float* src, std::int64_t rs,
                                              int rows, int cols, int tid) {
  constexpr int kChunks = D / 4, kPitch = D + 4;
  static_assert(THREADS % kChunks == 0, "a thread copies one chunk column");
  constexpr int kStep = THREADS / kChunks;
  static_assert(ROWS % kStep == 0, "tile rows must split evenly");
  const int c = tid % kChunks, r0 = tid / kChunks;
  const bool col_ok = c * 4 < cols;
  const float* p = src + r0 * rs + c * 4;
  const std::uint32_t d0 = dst + (r0 * kPitch + c * 4) * 4;
#pragma unroll
  for (int i = 0; i < ROWS / kStep; ++i) {
    const bool ok = col_ok && r0 + i * kStep < rows;
    cp_async16(d0 + i * kStep * kPitch * 4, ok ? p : src, ok ? 16 : 0);
    p += kStep * rs;
  }
}

// GS and GP (high only): how many k-steps of S = Q K^T and of P V are summed
// by the tensor core (truncating) before the f32 add into the running sum.
// GS = 1, GP = 1 sums every k-step apart (mma_split); GS = D / 8 accumulates
// S straight; GP = BN / 8 sums P V per key tile, output block by output
// block (one group quad live instead of D / 8). Their errors against
// register and FADD cost: docs/log/cuda-tuning.md, "Session 10 trials".
template <int D, int BM, int BN, int STAGES, bool X3, bool QREG, int MINB, int GS, int GP>
__global__ void __launch_bounds__(Tf32Config<D, BM>::kThreads, MINB)
    flash_tf32_kernel(const FlashArgs a) {
  static_assert(GS >= 1 && (D / 8) % GS == 0, "S groups split the k-steps of d");
  static_assert(GP == 1 || GP == BN / 8, "P V sums every k-step or every tile apart");
  using C = Tf32Config<D, BM>;
  using Op = Tf32<X3>;
  constexpr int kThreads = C::kThreads, kP = C::kPitch;
  constexpr int kRowBytes = kP * 4;
  const float kNegInf = -__int_as_float(0x7f800000);

  extern __shared__ __align__(128) unsigned char smem_raw[];
  float* sQ = reinterpret_cast<float*>(smem_raw);
  float* sK = sQ + BM * kP;
  float* sV = sK + STAGES * BN * kP;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t4 = lane & 3;

  const FlashTile<float> tile = flash_tile<float, BM>(a, blockIdx.x);
  const std::int64_t b = tile.b, h = tile.h, m0 = tile.m0;
  const int rows = tile.rows;
  const float *q = tile.q, *k = tile.k, *v = tile.v;

  const KeyTiles keys = band_key_tiles<BN>(a, m0, rows);  // the keys these rows can keep
  const std::int64_t t_begin = keys.begin, t_end = keys.end;

  const std::uint32_t sQ_u = smem_u32(sQ), sK_u = smem_u32(sK);
  const std::uint32_t sV_u = smem_u32(sV);
  constexpr int kTileBytes = BN * kRowBytes;
  auto load_kv = [&](std::int64_t t, int stage) {
    const std::int64_t n0 = t * BN;
    const int nrows = a.N - n0 < BN ? int(a.N - n0) : BN;
    load_tile_f32<D, BN, kThreads>(sK_u + stage * kTileBytes, k + n0 * a.k_ns, a.k_ns, nrows, a.d,
                                   tid);
    load_tile_f32<D, BN, kThreads>(sV_u + stage * kTileBytes, v + n0 * a.v_ns, a.v_ns, nrows, a.dv,
                                   tid);
  };

  // Prologue: Q with the first tile, then STAGES - 2 more tiles.
  load_tile_f32<D, BM, kThreads>(sQ_u, q, a.q_ms, rows, a.d, tid);
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (t_begin + s < t_end) load_kv(t_begin + s, s);
    cp_async_commit();
  }

  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  float row_m[2] = {kNegInf, kNegInf}, row_l[2] = {0.f, 0.f};

  // Q fragments, rounded or split: held for the whole loop (QREG), or read
  // from sQ per 8 columns, which frees D / 2 (medium) or D (high)
  // registers.
  Op qf[QREG ? D / 8 : 1][4];
  const int wrow = warp * 16;  // this warp's first row in the tile
  // ldmatrix.x4 of Q columns [8 kk, 8 kk + 8): matrices (rows 0-7, chunk
  // 2 kk), (rows 8-15, 2 kk), (rows 0-7, 2 kk + 1), (rows 8-15, 2 kk + 1).
  const std::uint32_t q_addr = sQ_u + (wrow + (lane & 15)) * kRowBytes + ((lane >> 4) << 4);
  auto load_q = [&](int kk, Op* dst) {
    std::uint32_t r[4];
    ldsm_x4(r, q_addr + kk * 32);
#pragma unroll
    for (int e = 0; e < 4; ++e) dst[e].set_bits(r[e]);
  };
  // ldmatrix.x4 of K for keys [16 jp, 16 jp + 16), columns [8 kk, 8 kk + 8):
  // matrices (keys 0-7, chunk 2 kk) = b0 and (keys 0-7, 2 kk + 1) = b1 of
  // the first 8 keys, then the same for the next 8.
  const std::uint32_t k_off =
      ((lane & 7) + ((lane >> 4) << 3)) * kRowBytes + (((lane >> 3) & 1) << 4);
  // V fragment of this lane: V[key 2 t4 (+1)][col g] of each 8 x 8 block.
  const int v_off = 2 * t4 * kP + g;

  const HeadMask<float> mask = head_mask<float>(a, b, h);
  // This thread's rows: i0 and i0 + 8.
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
      for (int kk = 0; kk < D / 8; ++kk) load_q(kk, qf[QREG ? kk : 0]);
    }

    // S = Q K^T for this warp's 16 rows and BN keys.
    float s[BN / 8][4];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] = 0.f;
    const std::uint32_t kst = sK_u + stage * kTileBytes + k_off;
    // Groups of GS k-steps (high with 1 < GS < D / 8) sum into sg first.
    constexpr bool kGroupS = X3 && GS > 1 && GS < D / 8;
    float sg[kGroupS ? BN / 8 : 1][4];
#pragma unroll
    for (int kk = 0; kk < D / 8; ++kk) {
      if (!QREG) load_q(kk, qf[0]);
      const Op* qa = qf[QREG ? kk : 0];
      if constexpr (kGroupS) {
        if (kk % GS == 0)
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) sg[j][e] = 0.f;
      }
#pragma unroll
      for (int jp = 0; jp < BN / 16; ++jp) {
        std::uint32_t r[4];
        ldsm_x4(r, kst + jp * 16 * kRowBytes + kk * 32);
        Op bf[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) bf[e].set_bits(r[e]);
        if constexpr (kGroupS) {
          mma_chain<X3>(sg[2 * jp], qa, bf[0], bf[1]);
          mma_chain<X3>(sg[2 * jp + 1], qa, bf[2], bf[3]);
        } else if constexpr (GS == 1) {
          mma_split<X3>(s[2 * jp], qa, bf[0], bf[1]);
          mma_split<X3>(s[2 * jp + 1], qa, bf[2], bf[3]);
        } else {
          mma_chain<X3>(s[2 * jp], qa, bf[0], bf[1]);
          mma_chain<X3>(s[2 * jp + 1], qa, bf[2], bf[3]);
        }
      }
      if constexpr (kGroupS) {
        if (kk % GS == GS - 1)
#pragma unroll
          for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[j][e] += sg[j][e];
      }
    }

    // Scores to base 2 (c = scale * log2(e)); masks where the tile needs
    // them.
    const std::int64_t n0 = t * BN;
    const bool inside_band =
        !a.has_band || (n0 >= m0 + BM - 1 + a.band_lo && n0 + BN - 1 <= m0 + a.band_hi);
    const bool need_mask = a.mask_kind != 0 || n0 + BN > a.N || !inside_band;
    const float c = a.scale_log2;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[j][e] *= c;
    if (need_mask) {
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[j][e] =
              masked_score(a, mask, i0 + (e >> 1) * 8, n0 + j * 8 + 2 * t4 + (e & 1), s[j][e]);
        }
      }
    }

    // Online softmax for rows g (r = 0) and g + 8 (r = 1), in base 2.
    float alpha[2];
    bool rescale = false;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = kNegInf;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * r], s[j][2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      mx = fmaxf(mx, row_m[r]);
      const float m_use = mx == kNegInf ? 0.f : mx;  // a row with nothing kept yet
      alpha[r] = ex2(row_m[r] - m_use);
      rescale = rescale || alpha[r] != 1.f;
      row_m[r] = mx;
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        s[j][2 * r] = ex2(s[j][2 * r] - m_use);
        s[j][2 * r + 1] = ex2(s[j][2 * r + 1] - m_use);
        sum += s[j][2 * r] + s[j][2 * r + 1];
      }
      row_l[r] = row_l[r] * alpha[r] + sum;
    }
    // Once the row maxima settle, alpha is exactly 1: skip the rescale when
    // it is for every row of the warp.
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        o[n][0] *= alpha[0];
        o[n][1] *= alpha[0];
        o[n][2] *= alpha[1];
        o[n][3] *= alpha[1];
      }
    }

    // O += P V, 8 keys per step. The A operand's k = t4 is key 2 t4 and
    // k = t4 + 4 is key 2 t4 + 1: (c0, c2, c1, c3) of the score block.
    const float* vst = sV + stage * BN * kP + v_off;
    if constexpr (X3 && GP == BN / 8 && GP > 1) {
      // The tile's sum per output block: P split once, then each block's
      // 3 BN / 8 MMAs chained into one zeroed quad and added in f32.
      Op pf[BN / 8][4];
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk) {
        pf[kk][0].set(s[kk][0]);
        pf[kk][1].set(s[kk][2]);
        pf[kk][2].set(s[kk][1]);
        pf[kk][3].set(s[kk][3]);
      }
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        float tq[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int kk = 0; kk < BN / 8; ++kk) {
          Op b0, b1;
          b0.set(vst[kk * 8 * kP + n * 8]);
          b1.set(vst[kk * 8 * kP + kP + n * 8]);
          mma_chain<X3>(tq, pf[kk], b0, b1);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) o[n][e] += tq[e];
      }
    } else {
#pragma unroll
      for (int kk = 0; kk < BN / 8; ++kk) {
        Op pf[4];
        pf[0].set(s[kk][0]);
        pf[1].set(s[kk][2]);
        pf[2].set(s[kk][1]);
        pf[3].set(s[kk][3]);
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
          Op b0, b1;
          b0.set(vst[kk * 8 * kP + n * 8]);
          b1.set(vst[kk * 8 * kP + kP + n * 8]);
          mma_split<X3>(o[n], pf, b0, b1);
        }
      }
    }
    __syncthreads();  // this stage is refilled by the next iteration's load
  }
  cp_async_wait<0>();
  __syncthreads();

  // Finish the rows: full row sums, out = o / l (0 when nothing was kept).
  float inv[2];
  finish_rows(a, flash_lse(a, b, h), i0, row_m, row_l, inv, t4);

  // Stage the output in this warp's rows of sQ, then store whole rows:
  // 16-byte vectors where the layout allows, elements otherwise.
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = wrow + g + 8 * r;
      *reinterpret_cast<float2*>(sQ + row * kP + n * 8 + 2 * t4) =
          make_float2(o[n][2 * r] * inv[r], o[n][2 * r + 1] * inv[r]);
    }
  __syncthreads();
  float* out = static_cast<float*>(a.out) + batch_off(a, b, a.o_bs) + h * a.o_hs + m0 * a.o_ms;
  for (int i = tid; i < BM * C::kChunks; i += kThreads) {
    const int r = i / C::kChunks, cc = i % C::kChunks;
    if (r >= rows || cc * 4 >= a.dv) continue;
    const float* src = sQ + r * kP + cc * 4;
    float* dst = out + r * a.o_ms + cc * 4 * a.o_ds;
    if (a.o_vec) {
      *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
    } else {
      for (int e = 0; e < 4 && cc * 4 + e < a.dv; ++e) dst[e * a.o_ds] = src[e];
    }
  }
}

}  // namespace strata::cuda::flash
