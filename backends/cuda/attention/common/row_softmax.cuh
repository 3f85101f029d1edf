#pragma once
// One query row's step of the online softmax in the streaming kernels
// (ffma/tiled.cuh, ffma/pipelined.cuh): the row's scores of a key
// tile to base 2 under its bounds, band and mask, their max over the
// threads that share the row, and the rescale of the row's running state.
// What each kernel does with the probabilities (P in shared memory, P^T
// from registers) stays its own. The decode kernels' softmax step
// (decode/kernel.cuh) takes rescale_row too; sum_over_row_lanes is the
// streaming kernels' last sum of l.
#include <cstdint>

#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

// s[j]: this thread's scores of row `row` against keys j0 + tx + CG j (j <
// TN), times sl2 (scale log2 e) in place; keys past j_end, outside the band
// or dropped by the mask become -inf, a float mask's bias is added (no
// tests when `full`: the whole tile is kept). Returns the row's max over
// its CG adjacent lanes (xor shuffles). row by reference: as a value
// argument its bound test was put the other way round before inlining,
// which changed the kernels' PTX.
template <class T, int TN, int CG>
__device__ __forceinline__ T scale_mask_row(const AttnParams& p, const void* mask_head, bool full,
                                            T sl2, const std::int64_t& row, std::int64_t j0,
                                            std::int64_t j_end, int tx, T (&s)[TN]) {
  const AttentionArgs& a = p.a;
  T tmax = neg_inf<T>();
#pragma unroll
  for (int j = 0; j < TN; ++j) {
    T x = s[j] * sl2;
    if (!full) {
      const std::int64_t col = j0 + tx + CG * j;
      T bias = 0;
      const bool kept = row < a.M && col < j_end && key_kept<T>(p, mask_head, row, col, &bias);
      x = kept ? x + bias : neg_inf<T>();
    }
    s[j] = x;
    tmax = fmax_(tmax, x);
  }
#pragma unroll
  for (int sh = CG / 2; sh > 0; sh >>= 1)
    tmax = fmax_(tmax, __shfl_xor_sync(0xffffffffu, tmax, sh));
  return tmax;
}

// The row's running max m_run moves to include the tile's max tmax; l_run
// and the NO output accumulators o take the factor 2^(old - new). Returns
// the base the tile's exponents take (0 while the row has kept nothing).
template <class T, int NO>
__device__ __forceinline__ T rescale_row(T tmax, T& m_run, T& l_run, T (&o)[NO]) {
  const T m_new = fmax_(m_run, tmax);
  // The guard only picks the exponent base; m_run keeps the true max.
  const T m_use = m_new == neg_inf<T>() ? T(0) : m_new;
  const T alpha = fexp2(m_run - m_use);
  m_run = m_new;
  l_run *= alpha;
#pragma unroll
  for (int c = 0; c < NO; ++c) o[c] *= alpha;
  return m_use;
}

// Each of the TM rows' l_run summed over the CG adjacent lanes that share
// the row (xor shuffles): the streaming kernels' step before store_row.
template <int CG, class T, int TM>
__device__ __forceinline__ void sum_over_row_lanes(T (&l_run)[TM]) {
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int sh = CG / 2; sh > 0; sh >>= 1) l_run[i] += __shfl_xor_sync(0xffffffffu, l_run[i], sh);
}

}  // namespace strata::cuda
