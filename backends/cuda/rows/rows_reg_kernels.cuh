#pragma once
// The `reg` 16-bit row kernels: layer_norm and softmax on f16/bf16 rows of
// 2048, 4096 or 8192 elements (256, 512 or 1024 vectors of 16 bytes) whose
// operands take 16-byte vectors, one block per row at a time, every thread
// holding the same count of elements. Per element they issue about 9.5
// instructions for layer_norm and 6.5 for softmax, against ~14 and ~9.5 in
// the fused kernels (docs/log/ops.md, "Rows16 reg"):
// - the row is widened once into f32 registers, not re-widened in each
//   pass;
// - layer_norm's statistics in one pass over the registers, shifted by the
//   thread's first value (its cancellation is bounded by the thread's
//   values, Samuelson's inequality), then ONE reduction of (sum, M2) pairs
//   whose counts are equal at every step, so Chan's between-set term is
//   d^2 / (2m) with a constant 1 / (2m): no division, no count shuffled;
// - softmax's exponentials as ex2(fma(x, log2 e, -c)) with c = the thread's
//   max times log2 e, and the (c, sum) pairs combined in that log2 domain,
//   so c's rounding is the same in every exponent that it scales and
//   cancels in the quotient; the output is e * 2^(c - C) / S, one multiply.
// rows_reg.cu launches the default configurations (layer_norm with eight
// vectors per thread, softmax with four); the lab's candidates
// (backends/cuda/lab/rows/) the others.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <type_traits>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_fused.cuh"

namespace strata::cuda::fastrow {
namespace {

constexpr int kSoftmaxOp = 1;  // kernel kinds for the launch bounds
constexpr int kNormOp = 0;

// Resident threads per SM asked of ptxas (__launch_bounds__), as many as
// compile without spills (ptxas for sm_90a, docs/log/ops.md "Rows16 reg").
// Two vectors per thread: softmax 1536 (40 registers: 6 blocks of 256 for
// 4096 columns), layer_norm 1280 (48: 5 of 256), 1024 for blocks of 512
// (8192 columns; they spill at 1536). Four: softmax 1280 (48: 10 blocks of
// 128 for 4096 columns), layer_norm 896 (72: 7 of 128; 56 bytes of spill
// at 64). Eight: softmax 768 (12 blocks of 64 for 4096 columns), layer_norm
// 640 (10 of 64).
template <int TPR, int kNV, int OP>
inline constexpr int kRegMinBlocks = [] {
  const int threads = kNV == 8           ? (OP == kSoftmaxOp ? 768 : 640)
                      : kNV == 4         ? (OP == kSoftmaxOp ? 1280 : 896)
                      : OP == kSoftmaxOp ? 1536
                      : TPR == 512       ? 1024
                                         : 1280;
  return threads / TPR > 0 ? threads / TPR : 1;
}();

// ---- 16-bit pairs <-> f32 -------------------------------------------------
template <class T>
__device__ __forceinline__ float2 widen2(unsigned w) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return {__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)};
  } else {
    __half2 h;
    static_assert(sizeof(h) == sizeof(w));
    memcpy(&h, &w, sizeof(w));
    return __half22float2(h);
  }
}
// Rounds (a, b) to one 32-bit pair (a in the low half, as element order).
template <class T>
__device__ __forceinline__ unsigned narrow2(float a, float b) {
  unsigned w;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    memcpy(&w, &h, sizeof(w));
  } else {
    const __half2 h = __floats2half2_rn(a, b);
    memcpy(&w, &h, sizeof(w));
  }
  return w;
}

// x's row is read once: no L1 allocation, so that weight and bias, which
// every row of the SM reads, stay in L1.
__device__ __forceinline__ uint4 ld_stream(const void* g) {
  uint4 r;
  asm volatile("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(g));
  return r;
}
__device__ __forceinline__ uint4 ld16(const void* g) { return *static_cast<const uint4*>(g); }
__device__ __forceinline__ void st16(void* g, uint4 v) { *static_cast<uint4*>(g) = v; }
__device__ __forceinline__ unsigned word(const uint4& v, int k) {
  return k == 0 ? v.x : k == 1 ? v.y : k == 2 ? v.z : v.w;
}

// This thread's vectors of a row: vector lane + i * TPR (coalesced).
template <int TPR, int kNV>
__device__ __forceinline__ void load_x(const char* row, int lane, uint4 (&r)[kNV]) {
#pragma unroll
  for (int i = 0; i < kNV; ++i) r[i] = ld_stream(row + (std::int64_t(lane) + i * TPR) * 16);
}
template <class T, int kNV>
__device__ __forceinline__ void widen_row(const uint4 (&r)[kNV], float (&x)[kNV * 8]) {
#pragma unroll
  for (int i = 0; i < kNV; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = widen2<T>(word(r[i], k));
      x[i * 8 + 2 * k] = f.x;
      x[i * 8 + 2 * k + 1] = f.y;
    }
}

// Reduces v over the block's TPR threads with comb(a, b, level): level 0
// for operands of kNE elements each (the first shuffle step), 1 for the
// next, and so on; comb must give both operands' lanes the same bits, so
// that every lane ends with the same value. Across warps: lane l of every
// warp reads warp l % W's partial from sh (2 x W slots, alternating by
// `parity`, so that consecutive rows need one barrier each) and the same
// butterfly runs over W lanes: every thread of the block gets the same bits.
template <int TPR, class Comb>
__device__ __forceinline__ float2 block_reduce(float2 v, float2* sh, int parity, Comb comb) {
  constexpr int W = TPR / 32;
#pragma unroll
  for (int o = 16, lv = 0; o > 0; o >>= 1, ++lv) {
    const float2 u = {__shfl_xor_sync(0xffffffffu, v.x, o), __shfl_xor_sync(0xffffffffu, v.y, o)};
    v = comb(v, u, lv);
  }
  float2* b = sh + parity * W;
  if (threadIdx.x % 32 == 0) b[threadIdx.x / 32] = v;
  __syncthreads();
  v = b[threadIdx.x % W];
#pragma unroll
  for (int o = 1, lv = 5; o < W; o <<= 1, ++lv) {
    const float2 u = {__shfl_xor_sync(0xffffffffu, v.x, o), __shfl_xor_sync(0xffffffffu, v.y, o)};
    v = comb(v, u, lv);
  }
  return v;
}

// ---- layer_norm ------------------------------------------------------------
// (sum, M2) of two sets of kNE * 2^level values each: Chan et al.'s
// between-set term (sa - sb)^2 / (2m) with m = kNE * 2^level. Swapping the
// operands negates d exactly, so both lanes get the same bits.
template <int kNE>
struct SumM2Eq {
  __device__ __forceinline__ float2 operator()(float2 a, float2 b, int level) const {
    const float k = 0.5f / (float(kNE) * float(1 << level));  // a constant once unrolled
    const float d = a.x - b.x;
    return {a.x + b.x, fmaf(d, d * k, a.y + b.y)};
  }
};

// (sum, M2) of this thread's kNE values in one pass, shifted by k, its first
// value. IN_PLACE: x becomes x - k. PAIRWISE: the vectors' partials summed
// pairwise (a shorter chain, reg8's), else in order (reg's).
template <int kNV, bool IN_PLACE, bool PAIRWISE, int kNE = kNV * 8>
__device__ __forceinline__ float2 shifted_sum_m2(float (&x)[kNE], float k) {
  float s[kNV], q[kNV];
#pragma unroll
  for (int i = 0; i < kNV; ++i) {
    s[i] = 0.0f;
    q[i] = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float d = x[i * 8 + j] - k;
      if constexpr (IN_PLACE) x[i * 8 + j] = d;
      s[i] += d;
      q[i] = fmaf(d, d, q[i]);
    }
  }
  float st = s[0], qt = q[0];
  if constexpr (PAIRWISE) {
#pragma unroll
    for (int h = kNV / 2; h > 0; h /= 2)
#pragma unroll
      for (int i = 0; i < h; ++i) {
        s[i] += s[i + h];
        q[i] += q[i + h];
      }
    st = s[0];
    qt = q[0];
  } else {
#pragma unroll
    for (int i = 1; i < kNV; ++i) {
      st += s[i];
      qt += q[i];
    }
  }
  const float m2 = fmaxf(fmaf(-st, st * (1.0f / kNE), qt), 0.0f);  // >= 0 despite rounding
  return {fmaf(float(kNE), k, st), m2};
}

// ---- layer_norm, eight vectors per thread --------------------------------------
// The shifted pass leaves d = x - k in the registers, so the output is
// t = fma(d, inv, (k - mu) inv), one FMA where the two- and four-vector
// kernel (the lab's) pays a subtract and a multiply ((k - mu) inv is bounded
// by the row's spread, so its rounding is not scaled by |mu| / sigma, and a
// constant row gives t = 0 exactly); weight and bias are compile-time present
// or absent (no per-word select of a splat); 8 vectors per thread halve the
// four-vector kernel's threads per row, so its reduction and addressing per
// row.

template <class T, int TPR, bool kW, bool kB>
__global__ void __launch_bounds__(TPR, kRegMinBlocks<TPR, 8, kNormOp>)
    norm_reg8_kernel(RowParams p) {
  constexpr int kNV = 8, kNE = kNV * 8;
  __shared__ float2 sh[2 * (TPR / 32)];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x;
  const float eps = static_cast<float>(p.scalar[0]);
  const float rn = 1.0f / static_cast<float>(p.n);
  int parity = 0;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    uint4 r[kNV];
    load_x<TPR, kNV>(p.ptr[1] + off[1] * 2, lane, r);
    float d[kNE];
    widen_row<T, kNV>(r, d);
    const float k = d[0];
    const float2 st =
        block_reduce<TPR>(shifted_sum_m2<kNV, true, true>(d, k), sh, parity, SumM2Eq<kNE>{});
    parity ^= 1;
    const float mu = st.x * rn, inv = rsqrtf(st.y * rn + eps);
    const float c0 = (k - mu) * inv;  // t = (x - mu) inv = d inv + c0
    char* out = p.ptr[0] + off[0] * 2;
#pragma unroll
    for (int i = 0; i < kNV; ++i) {
      const std::int64_t e = (std::int64_t(lane) + i * TPR) * 16;
      uint4 wv{}, bv{};
      if constexpr (kW) wv = ld16(p.ptr[2] + off[2] * 2 + e);
      if constexpr (kB) bv = ld16(p.ptr[3] + off[3] * 2 + e);
      uint4 o;
      unsigned* ow = &o.x;
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        float y[2] = {fmaf(d[i * 8 + 2 * h], inv, c0), fmaf(d[i * 8 + 2 * h + 1], inv, c0)};
        if constexpr (kW) {
          const float2 g = widen2<T>(word(wv, h));
          if constexpr (kB) {
            const float2 c = widen2<T>(word(bv, h));
            y[0] = fmaf(y[0], g.x, c.x);
            y[1] = fmaf(y[1], g.y, c.y);
          } else {
            y[0] *= g.x;
            y[1] *= g.y;
          }
        } else if constexpr (kB) {
          const float2 c = widen2<T>(word(bv, h));
          y[0] += c.x;
          y[1] += c.y;
        }
        ow[h] = narrow2<T>(y[0], y[1]);
      }
      st16(out + e, o);
    }
  }
}

// ---- softmax ---------------------------------------------------------------
// (c, s): s = sum of 2^(x log2 e - c). Two combine at C = max(ca, cb), each
// sum scaled by 2^(c - C); products rounded on their own (no contraction),
// so both lanes of a shuffle step get the same bits. c is never -inf (a
// thread of -inf and NaN values has c = 0).
struct CSum {
  __device__ __forceinline__ float2 operator()(float2 a, float2 b, int) const {
    const float c = fmaxf(a.x, b.x);
    return {c, __fadd_rn(__fmul_rn(a.y, ex2_approx(a.x - c)), __fmul_rn(b.y, ex2_approx(b.x - c)))};
  }
};

template <class T, int TPR, int kNV>
__global__ void __launch_bounds__(TPR, kRegMinBlocks<TPR, kNV, kSoftmaxOp>)
    softmax_reg_kernel(RowParams p) {
  __shared__ float2 sh[2 * (TPR / 32)];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x;
  int parity = 0;
  constexpr int kNE = kNV * 8;
  auto row_out = [&](const uint4(&r)[kNV], std::int64_t oo) {
    float x[kNE];
    widen_row<T, kNV>(r, x);
    float m0 = -INFINITY, m1 = -INFINITY;  // NaN ignored (fmaxf), as MaxOp
#pragma unroll
    for (int j = 0; j < kNE; j += 2) {
      m0 = fmaxf(m0, x[j]);
      m1 = fmaxf(m1, x[j + 1]);
    }
    const float mt = fmaxf(m0, m1);
    // All -inf (or NaN): exponents -inf (or NaN), sum 0 (or NaN).
    const float c = mt == -INFINITY ? 0.0f : mt * kLog2e;
    float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
    for (int j = 0; j < kNE; j += 2) {  // x becomes e in place
      x[j] = ex2_approx(fmaf(x[j], kLog2e, -c));
      x[j + 1] = ex2_approx(fmaf(x[j + 1], kLog2e, -c));
      s0 += x[j];
      s1 += x[j + 1];
    }
    const float2 g = block_reduce<TPR>(float2{c, s0 + s1}, sh, parity, CSum{});
    parity ^= 1;
    // A row of -inf: S = 0 and e = 0, so 0 * inf = NaN, as the reference.
    const float scale = __fdividef(ex2_approx(c - g.x), g.y);
    char* out = p.ptr[0] + oo * 2;
#pragma unroll
    for (int i = 0; i < kNV; ++i) {
      uint4 o;
      unsigned* ow = &o.x;
#pragma unroll
      for (int k = 0; k < 4; ++k)
        ow[k] = narrow2<T>(x[i * 8 + 2 * k] * scale, x[i * 8 + 2 * k + 1] * scale);
      st16(out + (std::int64_t(lane) + i * TPR) * 16, o);
    }
  };
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    uint4 r[kNV];
    load_x<TPR, kNV>(p.ptr[1] + off[1] * 2, lane, r);
    row_out(r, off[0]);
  }
}

// ---- launch geometry -----------------------------------------------------------
// Calls go(integral_constant<TPR>) for rows of 256, 512 or 1024 vectors of
// 16 bytes (TPR = vectors / NV threads of NV vectors each); false for any
// other row.
template <int NV, class G>
bool by_width(const RowParams& p, G&& go) {
  static_assert(NV == 2 || NV == 4 || NV == 8);
  if (!p.vec || p.rows == 0) return false;
  const std::int64_t v = p.n / 8;
  if (v != 256 && v != 512 && v != 1024) return false;
  if (v == 256) go(std::integral_constant<int, 256 / NV>{});
  if (v == 512) go(std::integral_constant<int, 512 / NV>{});
  if (v == 1024) go(std::integral_constant<int, 1024 / NV>{});
  return true;
}

}  // namespace
}  // namespace strata::cuda::fastrow
