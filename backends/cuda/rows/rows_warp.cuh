#pragma once
// The row loop of the kernels that run one warp per row (embedding's
// gather, rotary, index_copy); their lanes then walk the row.
#include <cstdint>

#include "cuda/rows/rows.cuh"

namespace strata::cuda {

inline constexpr int kWarpsPerBlock = kRowThreads / 32;

// body(off) for each of this warp's rows (kWarpsPerBlock rows per block),
// off the row's offsets (row_offsets).
template <class Body>
__device__ __forceinline__ void for_warp_rows(const RowParams& p, Body&& body) {
  for (std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       row < p.rows; row += std::int64_t(gridDim.x) * kWarpsPerBlock) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    body(off);
  }
}

}  // namespace strata::cuda
