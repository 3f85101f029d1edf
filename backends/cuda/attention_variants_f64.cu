// f64 kernel variants (see attention_variants_f32.cu for the parameters).
#include "cuda/attention_variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f64() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<double, 4, 1, 1, 8>>("f64.decode.d64"),
      decode<DecodeConfig<double, 4, 2, 2, 4>>("f64.decode.d128"),
      tiled<TiledConfig<double, 64, 32, 64, 64, 16, 8>>("f64.tiled.64x32.d64", true, 64, 64),
      tiled<TiledConfig<double, 64, 32, 32, 64, 16, 8>>("f64.tiled.64x32.any", true, 0, 0),
  };
  return v;
}

}  // namespace strata::cuda
