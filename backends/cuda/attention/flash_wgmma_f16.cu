// f16 configurations of the wgmma attention kernel (flash_wgmma_make.cuh has
// the list); bf16 and f16 compile in files of their own, in parallel.
#include "cuda/attention/flash_wgmma_make.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_f16() {
  static const std::vector<FlashVariant> v = wgmma_configs<__half>(DType::f16);
  return v;
}

}  // namespace strata::cuda
