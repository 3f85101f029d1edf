// TF32 (precision medium) configurations of the wgmma attention kernel
// (sm90/kernel_tf32.cuh): the defaults on sm_90a since 2026-12-01. Measured (H200, 2026-12-01,
// bench_attention_cuda f32medium_, TFLOP/s; the mma.sync defaults in brackets): d 128 B1 H32 L8192
// 190.6 (110.9), causal 176.8 (105.3); d 64 B4 H16 L4096 155.8 (103.4), causal 134.2 (95.7). Not
// kept: d 64 as one warpgroup at two CTAs per SM (64x64.b2, 122.9) and with 128-key tiles (128x128,
// 64 / 92 bytes of ptxas spill). Empty without sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/sm90/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32() {
  // <D, warpgroups (64 rows each), BN, X3, CTAs per SM the registers must allow>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<128, 2, 64, false, 1>("wg.tf32.d128.128x64"),
    make_wgmma_tf32_variant<64, 2, 64, false, 1>("wg.tf32.d64.128x64"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
