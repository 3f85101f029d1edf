// 3xTF32 (precision high) configurations of the wgmma attention kernel
// (flash_wgmma_tf32.cuh): candidates for the next GPU run, forced by
// STRATA_FLASH_VARIANT (docs/cuda-tuning.md, "f32 on wgmma"). Q, K and V
// keep big and small parts in shared memory, so d 128 fits one warpgroup
// of 32-key tiles, or two with V's one-slot register path (.vr). Empty
// without sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/flash_wgmma_tf32_make.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32x3() {
  // <D, warpgroups (64 rows each), BN, X3, CTAs per SM the registers must
  // allow, V through registers>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<64, 2, 64, true, 1>("wg.tf32x3.d64.128x64"),
    make_wgmma_tf32_variant<128, 1, 32, true, 1>("wg.tf32x3.d128.64x32"),
    // Two warpgroups at d 128: V through registers into one V^T slot
    // (Q's big and small parts take 128 KiB).
    make_wgmma_tf32_variant<128, 2, 32, true, 1, true>("wg.tf32x3.d128.128x32.vr"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
