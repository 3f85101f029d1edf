// f64 kernel variants (see ffma/variants_f32.cu for the parameters).
#include "cuda/attention/decode/variant_make.cuh"
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f64() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<double, 4, 1, 1, 8>>("f64.decode.d64"),
      decode<DecodeConfig<double, 4, 2, 2, 4>>("f64.decode.d128"),
      // Tensor cores (DMMA), DmmaConfig<warps, BN, DK, DV, MINB>. Run 21,
      // f64 b4h16 L2048 d64: 27.1 TFLOP/s against 13.8 for the DFMA kernel
      // below; one head 4096/d128 (8 warps, one block per SM): 27.2
      // against 7.4. Fewer registers for more warps spill and lose
      // (docs/cuda-tuning.md, runs 19-21).
      dmma<DmmaConfig<4, 32, 64, 64, 2>>("f64.dmma.64x32.d64", true),
      dmma<DmmaConfig<8, 16, 128, 128, 1>>("f64.dmma.128x16.d128", true),
      // DFMA: any head dim (in chunks), and the d <= 64 kernel the DMMA one
      // replaced, kept as the comparison (STRATA_CUDA_VARIANT only).
      tiled<TiledConfig<double, 64, 32, 32, 64, 16, 8>>("f64.tiled.64x32.any", true, 0, 0),
      tiled<TiledConfig<double, 64, 32, 64, 64, 16, 8>>("f64.tiled.64x32.d64", false, 64, 64),
  };
  return v;
}

}  // namespace strata::cuda
