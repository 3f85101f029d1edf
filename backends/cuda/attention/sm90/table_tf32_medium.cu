// TF32 (precision medium) configurations of the wgmma attention kernel
// (sm90/kernel_tf32.cuh), the defaults on sm_90a: two warpgroups of 64 rows
// against 64-key tiles at both head dims (docs/log/cuda-tuning.md, "f32 on
// wgmma: TF32 and 3xTF32"). Empty without sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/sm90/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32() {
  // <D, warpgroups (64 rows each), BN, precision, CTAs per SM the registers
  // must allow>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<128, 2, 64, kTf32, 1>("wgmma.tf32.d128.128x64"),
    make_wgmma_tf32_variant<64, 2, 64, kTf32, 1>("wgmma.tf32.d64.128x64"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
