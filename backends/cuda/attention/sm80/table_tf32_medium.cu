// TF32 (precision medium) configurations of the f32 tensor-core attention
// kernel; the defaults are the predicted best (docs/cuda-tuning.md, "f32 on
// the tensor cores").
#include "cuda/attention/sm80/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32() {
  // <D, BM, BN, STAGES, X3, Q in registers, MIN_BLOCKS>
  static const std::vector<FlashVariant> v = {
      make_tf32_variant<64, 64, 64, 2, false, true, 2>("tf32.d64.64x64.s2", true),
      make_tf32_variant<64, 64, 32, 3, false, true, 2>("tf32.d64.64x32.s3", false),
      make_tf32_variant<128, 64, 32, 2, false, true, 2>("tf32.d128.64x32.s2", true),
      make_tf32_variant<128, 64, 32, 2, false, false, 2>("tf32.d128.64x32.s2.qs", false),
      // 8 warps sharing each K/V tile: half the cp.async traffic per FLOP,
      // one CTA per SM.
      make_tf32_variant<64, 128, 64, 2, false, true, 1>("tf32.d64.128x64.s2", false),
      make_tf32_variant<128, 128, 32, 2, false, true, 1>("tf32.d128.128x32.s2", false),
  };
  return v;
}

}  // namespace strata::cuda
