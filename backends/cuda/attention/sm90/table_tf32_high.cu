// 3xTF32 (precision high) configurations of the wgmma attention kernel
// (sm90/kernel_tf32.cuh), the defaults on sm_90a. Q, K and V keep big and
// small parts in shared memory; at d 128 Q's alone take 128 KiB for two
// warpgroups, which fit only with V's one-slot register path (.v_through_registers)
// (docs/log/cuda-tuning.md, "f32 on wgmma: TF32 and 3xTF32"). Empty without
// sm_90a (STRATA_CUDA_WGMMA).
#include "cuda/attention/sm90/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_tf32x3() {
  // <D, warpgroups (64 rows each), BN, precision, CTAs per SM the registers
  // must allow, V's path>
  static const std::vector<FlashVariant> v = {
#if defined(STRATA_CUDA_WGMMA)
    make_wgmma_tf32_variant<64, 2, 64, kTf32x3, 1>("wgmma.tf32x3.d64.128x64"),
    make_wgmma_tf32_variant<128, 2, 32, kTf32x3, 1, kVThroughRegisters>(
        "wgmma.tf32x3.d128.128x32.v_through_registers"),
#endif
  };
  return v;
}

}  // namespace strata::cuda
