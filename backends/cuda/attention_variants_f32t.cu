// f32 transposed-tile variants (attention_tiled_t.cuh):
// TiledTConfig<T, BM, BN, DK, DV, RG, CG, MINB>, serving d <= DK, dv <= DV.
#include "cuda/attention_variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32t() {
  static const std::vector<Variant> v = {
      tiled_t<TiledTConfig<float, 128, 64, 64, 64, 16, 8, 2>>("f32.t.128x64.d64", false),
      tiled_t<TiledTConfig<float, 64, 64, 64, 64, 16, 8, 2>>("f32.t.64x64.d64", false),
      tiled_t<TiledTConfig<float, 64, 64, 64, 64, 16, 8, 3>>("f32.t.64x64.d64.m3", false),
      tiled_t<TiledTConfig<float, 64, 32, 128, 128, 16, 8, 2>>("f32.t.64x32.d128", false),
      tiled_t<TiledTConfig<float, 64, 64, 128, 128, 8, 16, 1>>("f32.t.64x64.d128", false),
      tiled_t<TiledTConfig<float, 64, 64, 128, 128, 16, 16, 1>>("f32.t.64x64.d128.nt256", false),
      // Default for 64 < d <= 128 (run 2: b1h32 L8192 d128 28.5 TFLOP/s vs 27.2).
      tiled_t<TiledTConfig<float, 128, 32, 128, 128, 32, 8, 1>>("f32.t.128x32.d128.nt256", true),
  };
  return v;
}

}  // namespace strata::cuda
