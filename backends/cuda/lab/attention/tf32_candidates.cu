// f32 TF32 mma.sync candidates kept for tuning (candidates.hpp), the path
// that runs where wgmma does not (below sm_90a, or forced):
// - high, one f32 sum per k-step (GS = GP = 1): the previous defaults
//   (mma.tf32x3.d64.64x64.2_stages, mma.tf32x3.d128.64x32.2_stages.q_shared), slower than the
//   grouped sums but the most accurate, and their untimed alternatives
//   (mma.tf32x3.d64.64x32.3_stages, mma.tf32x3.d128.64x64.2_stages.q_shared)
//   (docs/log/cuda-tuning.md, "Session 10 trials");
// - 8 warps sharing each K/V tile at one CTA per SM, half the cp.async
//   traffic per FLOP (mma.tf32x3.d64.128x64.2_stages, mma.tf32x3.d128.128x32.2_stages.q_shared,
//   mma.tf32.d64.128x64.2_stages, mma.tf32.d128.128x32.2_stages; the last ran ahead of medium's
//   d 128 default: "Run 2 of session 9");
// - medium with 32-key tiles at d 64 and Q from shared memory at d 128
//   (mma.tf32.d64.64x32.3_stages, mma.tf32.d128.64x32.2_stages.q_shared), not timed yet.
// Compiled only in a tuning build.
#include "cuda/attention/sm80/configs_tf32.cuh"
#include "cuda/lab/attention/candidates.hpp"

namespace strata::cuda::lab {

const std::vector<FlashVariant>& tf32_candidates(bool x3) {
  // <D, BM, BN, STAGES, precision, Q fragments, MIN_BLOCKS>
  static const std::vector<FlashVariant> high = {
      candidate(make_tf32_variant<64, 64, 64, 2, kTf32x3, kQInRegisters, 2>(
          "mma.tf32x3.d64.64x64.2_stages")),
      candidate(make_tf32_variant<64, 64, 32, 3, kTf32x3, kQInRegisters, 2>(
          "mma.tf32x3.d64.64x32.3_stages")),
      candidate(make_tf32_variant<128, 64, 32, 2, kTf32x3, kQInShared, 2>(
          "mma.tf32x3.d128.64x32.2_stages.q_shared")),
      candidate(make_tf32_variant<128, 64, 64, 2, kTf32x3, kQInShared, 1>(
          "mma.tf32x3.d128.64x64.2_stages.q_shared")),
      candidate(make_tf32_variant<64, 128, 64, 2, kTf32x3, kQInRegisters, 1>(
          "mma.tf32x3.d64.128x64.2_stages")),
      candidate(make_tf32_variant<128, 128, 32, 2, kTf32x3, kQInShared, 1>(
          "mma.tf32x3.d128.128x32.2_stages.q_shared")),
  };
  static const std::vector<FlashVariant> medium = {
      candidate(
          make_tf32_variant<64, 64, 32, 3, kTf32, kQInRegisters, 2>("mma.tf32.d64.64x32.3_stages")),
      candidate(make_tf32_variant<128, 64, 32, 2, kTf32, kQInShared, 2>(
          "mma.tf32.d128.64x32.2_stages.q_shared")),
      candidate(make_tf32_variant<64, 128, 64, 2, kTf32, kQInRegisters, 1>(
          "mma.tf32.d64.128x64.2_stages")),
      candidate(make_tf32_variant<128, 128, 32, 2, kTf32, kQInRegisters, 1>(
          "mma.tf32.d128.128x32.2_stages")),
  };
  return x3 ? high : medium;
}

}  // namespace strata::cuda::lab
