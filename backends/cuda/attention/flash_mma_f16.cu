// f16 configurations of the tensor-core attention kernel. Names leave the
// dtype out so that STRATA_FLASH_VARIANT=<name> forces a configuration for
// both dtypes (flash_mma_bf16.cu has the same list); the defaults are the
// measured best per head dim (docs/cuda-tuning.md).
#include "cuda/attention/flash_mma_make.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_f16() {
  using T = __half;
  constexpr DType dt = DType::f16;
  // <T, D, BM, BN, STAGES, MT (16-row blocks per warp), Q in registers, MIN_BLOCKS>
  static const std::vector<FlashVariant> v = {
      make_flash_variant<T, 64, 64, 64, 3, 1, true, 2>("d64.64x64.s3", dt, true),
      make_flash_variant<T, 64, 128, 32, 2, 2, true, 2>("d64.128x32.s2.mt2", dt, false),
      make_flash_variant<T, 64, 128, 64, 2, 2, false, 2>("d64.128x64.s2.mt2.qs", dt, false),
      make_flash_variant<T, 128, 64, 64, 2, 1, true, 2>("d128.64x64.s2", dt, true),
      make_flash_variant<T, 128, 128, 32, 2, 2, false, 1>("d128.128x32.s2.mt2.qs", dt, false),
  };
  return v;
}

}  // namespace strata::cuda
