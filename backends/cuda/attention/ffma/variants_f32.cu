// f32 kernel variants. TiledConfig<T, BM, BN, DK, DV, RG, CG, MINB>: BM
// query rows x BN keys per step, DK head-dim chunk (Q stays in shared memory
// when d <= DK), DV output columns per block, RG x CG threads, MINB blocks
// per SM promised to the register allocator.
#include "cuda/attention/decode/variant_make.cuh"
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<float, 4, 1, 1, 8>>("f32.decode.d128"),
      decode<DecodeConfig<float, 4, 2, 2, 4>>("f32.decode.d256"),
      // Default for d, dv <= 64: three blocks per SM beat two without spills
      // (run 1: b4h16 L4096 d64 29.4 TFLOP/s vs 25.6).
      tiled<TiledConfig<float, 64, 64, 64, 64, 16, 8, 3>>("f32.tiled.64x64.d64.m3", true, 64, 64),
      tiled<TiledConfig<float, 64, 64, 64, 64, 16, 8>>("f32.tiled.64x64.d64", false, 64, 64),
      tiled<TiledConfig<float, 64, 32, 128, 128, 16, 8>>("f32.tiled.64x32.d128", false, 128, 128),
      tiled<TiledConfig<float, 64, 32, 32, 64, 16, 8>>("f32.tiled.64x32.any", true, 0, 0),
      // Tuning candidates, only by STRATA_CUDA_VARIANT=name.
      tiled<TiledConfig<float, 128, 64, 64, 64, 16, 8, 1>>("f32.tiled.128x64.d64", false, 64, 64),
      tiled<TiledConfig<float, 64, 64, 64, 64, 8, 16>>("f32.tiled.64x64.d64.t8x4", false, 64, 64),
      tiled<TiledConfig<float, 64, 64, 128, 128, 16, 16, 1>>("f32.tiled.64x64.d128.nt256", false,
                                                             128, 128),
      tiled<TiledConfig<float, 64, 64, 64, 128, 16, 16, 1>>("f32.tiled.64x64.dk64.dv128", false, 0,
                                                            128),
  };
  return v;
}

}  // namespace strata::cuda
