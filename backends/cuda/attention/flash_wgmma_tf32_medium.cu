// TF32 (precision medium) configurations of the wgmma attention kernel
// (flash_wgmma_tf32.cuh): candidates for the next GPU run, forced by
// STRATA_FLASH_VARIANT (docs/cuda-tuning.md, "f32 on wgmma"). Empty without
// sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/flash_wgmma_tf32_make.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32() {
  // <D, warpgroups (64 rows each), BN, X3, CTAs per SM the registers must allow>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<128, 2, 64, false, 1>("wg.tf32.d128.128x64"),
    make_wgmma_tf32_variant<64, 2, 64, false, 1>("wg.tf32.d64.128x64"),
    // One warpgroup, two CTAs per SM (the bf16 d 64 default's shape):
    // the warpgroups of different CTAs are not held in step by barriers.
    make_wgmma_tf32_variant<64, 1, 64, false, 2>("wg.tf32.d64.64x64.b2"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
