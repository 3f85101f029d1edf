// 3xTF32 (precision high) configurations of the f32 mma.sync attention
// kernel, the defaults off sm_90a: 64x32 tiles, Q read from shared memory
// per 8 columns (at d 128 its big and small parts would take 128 registers;
// at d 64 the registers go to the summation groups), S summed in f32 per two
// k-steps (GS 2) and P V per key tile (GP = BN / 8): the grouping that was
// fastest at both head dims and stays under the f32 error bound
// (docs/log/cuda-tuning.md, "Session 10 trials").
#include "cuda/attention/sm80/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32x3() {
  // <D, BM, BN, STAGES, precision, Q fragments, MIN_BLOCKS, GS, GP>
  static const std::vector<FlashVariant> v = {
      make_tf32_variant<64, 64, 32, 3, kTf32x3, kQInShared, 2, 2, 4>(
          "mma.tf32x3.d64.64x32.3_stages.q_shared.grouped_sums"),
      make_tf32_variant<128, 64, 32, 2, kTf32x3, kQInShared, 2, 2, 4>(
          "mma.tf32x3.d128.64x32.2_stages.q_shared.grouped_sums"),
  };
  return v;
}

}  // namespace strata::cuda
