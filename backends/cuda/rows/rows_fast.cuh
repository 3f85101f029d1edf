#pragma once
// The contiguous-row fast path of layer_norm, rms_norm, softmax and
// log_softmax (docs/ops.md, "cuda performance"): taken when every walked
// operand's rows are unit-stride, 16-byte aligned and n % VEC == 0 (VEC = 16
// bytes / itemsize), for f32, f16 and bf16 rows of up to 512 * NV * VEC
// elements (8192 f32, 16384 f16/bf16). The row is loaded once, as NV
// 16-byte vectors per thread kept raw in registers (vector i of thread
// `lane` is vector lane + i * TPR of the row, so a warp's loads are
// coalesced), and converted to f32 on each use; nothing is re-read from
// global memory. TPR threads own a row: a warp (4 rows per 128-thread
// block, shuffle reductions only) for rows of up to 128 vectors, else one
// block of 128, 256 or 512 threads per row, whose reductions are warp
// shuffles plus one __syncthreads through a small shared array (two
// alternating buffers, so consecutive reductions need no second barrier).
// f64 and every other layout take the general kernels.
#include <type_traits>

#include "cuda/rows/rows.cuh"

namespace strata::cuda::fastrow {

inline constexpr int kMaxNV = 4;  // 16-byte vectors per thread

template <int TPR>
inline constexpr int kBlock = TPR < 128 ? 128 : TPR;

// Block-wide (or warp-wide when TPR == 32) reduction; every thread of the
// row gets the same value (the shared partials are combined in one order).
template <int TPR, class C>
struct Reducer {
  static constexpr int W = TPR / 32;
  C* sh;  // 2 * W values
  int k = 0;
  template <class Op>
  __device__ __forceinline__ C operator()(C v, Op op) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if constexpr (W > 1) {
      C* b = sh + (k & 1) * W;
      ++k;
      if (threadIdx.x % 32 == 0) b[threadIdx.x / 32] = v;
      __syncthreads();
      v = b[0];
#pragma unroll
      for (int i = 1; i < W; ++i) v = op(v, b[i]);
    }
    return v;
  }
};

// Loads vector lane + i * TPR of the row for i < NV (zeros past the end).
template <class T, int TPR, int NV>
__device__ __forceinline__ void load_row(const T* x, std::int64_t nvec, int lane,
                                         Vec<T, 16 / sizeof(T)> (&r)[NV]) {
  constexpr int VEC = 16 / sizeof(T);
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const std::int64_t e = lane + std::int64_t(i) * TPR;
    if (e < nvec)
      r[i] = ld_vec<T, VEC>(x + e * VEC);
    else
      r[i] = splat<VEC, T>(cvt<T>(0.0f));
  }
}

// Calls launch(integral_constant<TPR>, integral_constant<NV>, block, rows
// per block) for the configuration that fits n, or returns false when the
// fast path does not apply (not vectorisable, f64, or too long a row).
template <class T, class L>
bool dispatch(const RowParams& p, L&& launch) {
  if constexpr (sizeof(T) == 8) {
    return false;
  } else {
    constexpr int VEC = 16 / sizeof(T);
    if (!p.vec) return false;
    const std::int64_t nv = p.n / VEC;
    using std::integral_constant;
    if (nv <= 32)
      launch(integral_constant<int, 32>{}, integral_constant<int, 1>{});
    else if (nv <= 64)
      launch(integral_constant<int, 32>{}, integral_constant<int, 2>{});
    else if (nv <= 32 * kMaxNV)
      launch(integral_constant<int, 32>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 128 * kMaxNV)
      launch(integral_constant<int, 128>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 256 * kMaxNV)
      launch(integral_constant<int, 256>{}, integral_constant<int, kMaxNV>{});
    else if (nv <= 512 * kMaxNV)
      launch(integral_constant<int, 512>{}, integral_constant<int, kMaxNV>{});
    else
      return false;
    return true;
  }
}

template <int TPR>
inline int grid_for(std::int64_t rows) {
  return row_grid(rows, kBlock<TPR> / TPR);
}

}  // namespace strata::cuda::fastrow
