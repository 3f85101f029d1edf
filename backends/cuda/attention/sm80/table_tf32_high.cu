// 3xTF32 (precision high) configurations of the f32 tensor-core attention
// kernel. Q is read from shared memory per 8 columns (.qs: at d 128 its big
// and small parts would take 128 registers, and at d 64 the registers go to
// the summation groups). The defaults are the measured best (H200, 64x32
// tiles, .g2 summing S per two k-steps, .pvt summing P V per key tile:
// 40.6 / 40.2 TFLOP/s at d 64 / 128 against 33.6 / 35.6 for the previous
// defaults; docs/cuda-tuning.md, "Session 10 trials").
#include "cuda/attention/sm80/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32x3() {
  // <D, BM, BN, STAGES, X3, Q in registers, MIN_BLOCKS, GS, GP>
  static const std::vector<FlashVariant> v = {
      make_tf32_variant<64, 64, 32, 3, true, false, 2, 2, 4>("tf32x3.d64.64x32.s3.qs.g2.pvt", true),
      make_tf32_variant<128, 64, 32, 2, true, false, 2, 2, 4>("tf32x3.d128.64x32.s2.qs.g2.pvt",
                                                              true),
      // The previous defaults and their alternatives, one f32 sum per k-step.
      make_tf32_variant<64, 64, 64, 2, true, true, 2>("tf32x3.d64.64x64.s2", false),
      make_tf32_variant<64, 64, 32, 3, true, true, 2>("tf32x3.d64.64x32.s3", false),
      make_tf32_variant<128, 64, 32, 2, true, false, 2>("tf32x3.d128.64x32.s2.qs", false),
      make_tf32_variant<128, 64, 64, 2, true, false, 1>("tf32x3.d128.64x64.s2.qs", false),
      // 8 warps sharing each K/V tile: half the cp.async traffic per FLOP,
      // one CTA per SM.
      make_tf32_variant<64, 128, 64, 2, true, true, 1>("tf32x3.d64.128x64.s2", false),
      make_tf32_variant<128, 128, 32, 2, true, false, 1>("tf32x3.d128.128x32.s2.qs", false),
  };
  return v;
}

}  // namespace strata::cuda
