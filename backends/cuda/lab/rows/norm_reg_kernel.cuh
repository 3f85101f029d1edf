#pragma once
// The `reg` and `reg4` layer_norm kernel (STRATA_ROWS_VARIANT=reg, reg4):
// rows_reg_kernels.cuh's statistics with two or four vectors per thread,
// the normalisation as (x - mu) inv, weight and bias selected per word (a
// splat of 1 or 0 where absent). Lost to the eight-vector kernel at 4096
// columns (docs/log/ops.md, "Rows16 reg"); two vectors per thread were the
// fastest at 2048 columns, kept out of the default so that one form serves
// every length.
#include "cuda/rows/rows_reg_kernels.cuh"

namespace strata::cuda::fastrow {
namespace {

// Weight and bias: with two vectors per thread loaded with the row, in
// flight during the reduction (2-8 registers more than after it); with
// four, after the reduction (the 64-register cap).
template <int kNV>
inline constexpr bool kWEarly = kNV == 2;

// The bits of (v, v) as a pair of T (weight 1 and bias 0 when absent).
template <class T>
constexpr unsigned splat2(bool one) {
  const unsigned h = !one ? 0u : std::is_same_v<T, __nv_bfloat16> ? 0x3f80u : 0x3c00u;
  return h | h << 16;
}

template <class T, int TPR, int kNV>
__global__ void __launch_bounds__(TPR, kRegMinBlocks<TPR, kNV, kNormOp>)
    norm_reg_kernel(RowParams p) {
  constexpr int kNE = kNV * 8;
  __shared__ float2 sh[2 * (TPR / 32)];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x;
  const float eps = static_cast<float>(p.scalar[0]);
  const float rn = 1.0f / static_cast<float>(p.n);
  const bool has_w = p.ptr[2] != nullptr, has_b = p.ptr[3] != nullptr;
  int parity = 0;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    uint4 r[kNV], wv[kNV], bv[kNV];
    load_x<TPR, kNV>(p.ptr[1] + off[1] * 2, lane, r);
    auto load_wb = [&] {
#pragma unroll
      for (int i = 0; i < kNV; ++i) {
        const std::int64_t e = (std::int64_t(lane) + i * TPR) * 16;
        const unsigned one = splat2<T>(true), zero = splat2<T>(false);
        wv[i] = has_w ? ld16(p.ptr[2] + off[2] * 2 + e) : make_uint4(one, one, one, one);
        bv[i] = has_b ? ld16(p.ptr[3] + off[3] * 2 + e) : make_uint4(zero, zero, zero, zero);
      }
    };
    if constexpr (kWEarly<kNV>) load_wb();
    float x[kNE];
    widen_row<T, kNV>(r, x);
    const float2 st =
        block_reduce<TPR>(shifted_sum_m2<kNV, false, false>(x, x[0]), sh, parity, SumM2Eq<kNE>{});
    parity ^= 1;
    const float mu = st.x * rn, inv = rsqrtf(st.y * rn + eps);
    if constexpr (!kWEarly<kNV>) load_wb();
    char* out = p.ptr[0] + off[0] * 2;
#pragma unroll
    for (int i = 0; i < kNV; ++i) {
      uint4 o;
      unsigned* ow = &o.x;
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float2 g = widen2<T>(word(wv[i], k)), c = widen2<T>(word(bv[i], k));
        const float y0 = fmaf((x[i * 8 + 2 * k] - mu) * inv, g.x, c.x);
        const float y1 = fmaf((x[i * 8 + 2 * k + 1] - mu) * inv, g.y, c.y);
        ow[k] = narrow2<T>(y0, y1);
      }
      st16(out + (std::int64_t(lane) + i * TPR) * 16, o);
    }
  }
}

}  // namespace
}  // namespace strata::cuda::fastrow
