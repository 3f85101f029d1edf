#pragma once
// The pad pass of the bf16/f16 attention launcher (dispatch/launch_16bit.cu): q,
// k or v whose rows cannot be read in 16-byte chunks (d 100: 200-byte rows,
// 8-byte aligned) copied into scratch as rows of round_up(d, 8) elements,
// 16-byte aligned, zeros after column d, so that the 16-byte-row kernels
// serve them (FlashAttention's wrapper pads d to a multiple of 8 the same
// way). One launch for the call's copies, dispatch/pad_rows.cu: each thread writes
// one 16-byte chunk of a padded row with one store, from two 8-byte loads where the source rows
// allow (PadPlan::vec) or eight 2-byte ones; consecutive threads take
// consecutive chunks, so both sides are coalesced. Replaces the generic
// strided copy (and its memset) there, which moves a 16-bit row element by
// element (docs/log/cuda-tuning.md, "Head dim 100: pad pass and narrow
// P·V").
#include <cuda_runtime_api.h>

#include <cstdint>

#include "strata/operand.hpp"

namespace strata::cuda {

// A pad copy, planned on the host before the scratch is allocated (every
// size it needs is checked there, as strata::Error). Source rows: the dims
// above the column dim, those of size 1 dropped, adjacent ones the source
// lays out as one merged; the innermost (`inner` rows `inner_stride`
// apart) runs along blockIdx.x, the rest (`outer_*`, outermost first)
// along blockIdx.y.
struct PadPlan {
  int outer_dims = 0;
  std::uint32_t outer_shape[kMaxDims] = {};
  std::int64_t outer_stride[kMaxDims] = {};
  std::uint32_t outer_count = 1;
  std::uint32_t inner = 1;
  std::int64_t inner_stride = 0;
  int d = 0;              // source columns
  int chunks = 0;         // 16-byte chunks of a padded row (row = 8 chunks)
  bool vec = false;       // 8-byte loads: 8-byte aligned base, strides and d multiples of 4
  std::int64_t rows = 0;  // outer_count * inner (0: nothing to copy)
};

// Plans into p the copy of the 16-bit x (its stride-0 dims already of size
// 1, as flash_host::plan_pack leaves them) into the row-major layout with
// rows of `row` elements (a multiple of 8, at least x's columns); false
// when the pass does not take x: a column stride other than 1 (transposed,
// strided columns) or more rows than its 32-bit indices reach; the generic
// strided copy serves those. Sizes it cannot hold raise strata::Error.
// Shape: x [..., rows, d] -> [..., rows, row].
bool plan_pad(const Operand& x, std::int64_t row, PadPlan& p);

// One planned copy: from src (x's data) to dst (16-byte aligned).
struct PadJob {
  PadPlan plan;
  const void* src = nullptr;
  void* dst = nullptr;
};
inline constexpr int kMaxPadJobs = 3;  // q, k and v

// Launches the n (at most kMaxPadJobs) copies on st, all in one kernel.
void pad_rows_async(const PadJob* jobs, int n, cudaStream_t st);

}  // namespace strata::cuda
