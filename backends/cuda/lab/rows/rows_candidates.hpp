#pragma once
// The 16-bit row candidates that STRATA_ROWS_VARIANT selects in a tuning
// build (rows_variant.hpp lists them; rows_candidates.cu launches them).
// rows_norm.cu and rows_reduce.cu ask here first, under #if STRATA_TUNING.
#include <cuda_runtime.h>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_variant.hpp"

namespace strata::cuda::lab {

// Launches layer_norm (RMS false) or rms_norm of the f16/bf16 rows p under
// candidate `v`; false, launching nothing, for the default (tuned) or where
// no fast kernel takes p (the caller's general kernel then runs).
template <bool RMS, class T>
bool norm16_candidate(RowsVariant v, const RowParams& p, cudaStream_t st);

// The same for softmax and log_softmax (Log).
template <bool Log, class T>
bool softmax16_candidate(RowsVariant v, const RowParams& p, cudaStream_t st);

}  // namespace strata::cuda::lab
