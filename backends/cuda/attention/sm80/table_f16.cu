// f16 configurations of the mma.sync attention kernel (sm80/configs_16bit.cuh
// has the list); bf16 and f16 compile in files of their own, in parallel.
#include "cuda/attention/sm80/configs_16bit.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_f16() {
  static const std::vector<FlashVariant> v = mma_configs<__half>(DType::f16);
  return v;
}

}  // namespace strata::cuda
