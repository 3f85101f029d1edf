// 3xTF32 (precision high) configurations of the wgmma attention kernel
// (sm90/kernel_tf32.cuh): the defaults on sm_90a since 2026-12-01. Q, K and V keep big and small
// parts in shared memory; at d 128 Q's alone take 128 KiB for two warpgroups, which fit only with
// V's one-slot register path (.vr). Measured (H200, 2026-12-01, bench_attention_cuda f32high_,
// TFLOP/s; the mma.sync defaults in brackets): d 64 B4 H16 L4096 75.0 (40.5), causal 67.3 (37.7); d
// 128 B1 H32 L8192 67.3 (40.5), causal 60.6 (37.7). Not kept: d 128 as one warpgroup with two V^T
// slots (64x32, 41.7). Empty without sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/sm90/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32x3() {
  // <D, warpgroups (64 rows each), BN, X3, CTAs per SM the registers must
  // allow, V through registers>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<64, 2, 64, true, 1>("wg.tf32x3.d64.128x64"),
    make_wgmma_tf32_variant<128, 2, 32, true, 1, true>("wg.tf32x3.d128.128x32.vr"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
