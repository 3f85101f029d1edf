// f16 configurations of the wgmma attention kernel (sm90/configs_16bit.cuh has
// the list); bf16 and f16 compile in files of their own, in parallel.
#include "cuda/attention/sm90/configs_16bit.cuh"

namespace strata::cuda {

const std::vector<FlashVariant>& wgmma_variants_f16() {
  static const std::vector<FlashVariant> v = wgmma_configs<__half>(DType::f16);
  return v;
}

const std::vector<FlashVariant>& wgmma_variants_narrow_v_f16() {
  static const std::vector<FlashVariant> v = [] {
    std::vector<FlashVariant> all = wgmma_narrow_v_configs<__half>(DType::f16);
    const std::vector<FlashVariant>& rest = wgmma_variants_f16();
    all.insert(all.end(), rest.begin(), rest.end());
    return all;
  }();
  return v;
}

}  // namespace strata::cuda
