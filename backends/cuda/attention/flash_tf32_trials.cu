// Trial configurations of the f32 TF32 tensor-core attention kernel for the
// issue 15 A/B (docs/cuda-tuning.md, "Session 10 trials"): reached only
// through STRATA_FLASH_VARIANT, compiled apart from the default tables so
// that the two build in parallel. Suffixes: .pvt sums P V per key tile,
// .g2 sums S per two k-steps (high's summation groups, flash_tf32.cuh);
// .qs reads Q from shared memory per 8 columns.
#include "cuda/attention/flash_tf32_make.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32_trials() {
  // <D, BM, BN, STAGES, X3, Q in registers, MIN_BLOCKS, GS, GP>
  static const std::vector<FlashVariant> v = {
      // high: fewer f32 sums (and group quads) than one per k-step; Q read
      // from shared memory at d 64 too, for the registers.
      make_tf32_variant<64, 64, 64, 2, true, false, 2, 1, 1>("tf32x3.d64.64x64.s2.qs", false),
      make_tf32_variant<64, 64, 64, 2, true, false, 2, 1, 8>("tf32x3.d64.64x64.s2.qs.pvt", false),
      make_tf32_variant<64, 64, 32, 3, true, false, 2, 1, 4>("tf32x3.d64.64x32.s3.qs.pvt", false),
      make_tf32_variant<64, 64, 32, 3, true, false, 2, 2, 4>("tf32x3.d64.64x32.s3.qs.g2.pvt",
                                                             false),
      make_tf32_variant<128, 64, 32, 2, true, false, 2, 1, 4>("tf32x3.d128.64x32.s2.qs.pvt", false),
      make_tf32_variant<128, 64, 32, 2, true, false, 2, 2, 4>("tf32x3.d128.64x32.s2.qs.g2.pvt",
                                                              false),
      make_tf32_variant<128, 128, 32, 2, true, false, 1, 1, 4>("tf32x3.d128.128x32.s2.qs.pvt",
                                                               false),
      // medium d 64 with 128 keys per tile: half the barriers and softmax
      // passes per key.
      make_tf32_variant<64, 64, 128, 2, false, true, 2, 1, 1>("tf32.d64.64x128.s2", false),
  };
  return v;
}

}  // namespace strata::cuda
