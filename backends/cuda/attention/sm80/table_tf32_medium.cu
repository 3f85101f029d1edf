// TF32 (precision medium) configurations of the f32 mma.sync attention
// kernel, the defaults off sm_90a: 4 warps of 16 rows, Q in registers
// (docs/log/cuda-tuning.md, "f32 on the tensor cores: TF32 and 3xTF32").
#include "cuda/attention/sm80/configs_tf32.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32() {
  // <D, BM, BN, STAGES, precision, Q fragments, MIN_BLOCKS>
  static const std::vector<FlashVariant> v = {
      make_tf32_variant<64, 64, 64, 2, kTf32, kQInRegisters, 2>("mma.tf32.d64.64x64.2_stages"),
      make_tf32_variant<128, 64, 32, 2, kTf32, kQInRegisters, 2>("mma.tf32.d128.64x32.2_stages"),
  };
  return v;
}

}  // namespace strata::cuda
