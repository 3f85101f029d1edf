#pragma once
// The attention kernel candidates kept for tuning: configurations that lost
// a measurement to the default they sit beside but stay the baseline of an
// A/B, or that are built but not yet measured. Compiled only in a tuning
// build (cmake -DSTRATA_TUNING=ON, which also defines STRATA_TUNING=1 for the
// backend's sources); the launchers then append these tables to their own
// (dispatch/launch_streaming.cu, launch_16bit.cu, launch_tf32.cu), every
// entry with is_default false, so that a candidate runs only when
// STRATA_CUDA_VARIANT or STRATA_FLASH_VARIANT names it.
#include <vector>

#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/dispatch/streaming_variants.hpp"
#include "strata/dtype.hpp"

namespace strata::cuda::lab {

// f32 pipelined and f64 DFMA streaming candidates (ffma_candidates.cu).
const std::vector<Variant>& ffma_candidates();
// bf16 decode candidates (decode_candidates.cu).
const std::vector<Variant>& decode_candidates();
// bf16 / f16 mma.sync candidates (mma_candidates.cu).
const std::vector<FlashVariant>& mma_candidates(DType dt);
// f32 TF32 mma.sync candidates of precision high (x3) or medium
// (tf32_candidates.cu).
const std::vector<FlashVariant>& tf32_candidates(bool x3);

}  // namespace strata::cuda::lab
