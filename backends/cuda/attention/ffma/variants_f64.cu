// f64 decode, tensor-core (DMMA) and tiled (DFMA) variants; see
// ffma/variants_f32.cu for TiledConfig's parameters.
#include "cuda/attention/decode/variant_make.cuh"
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f64() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<double, 4, 1, 1, 8>>("f64.decode.d64"),
      decode<DecodeConfig<double, 4, 2, 2, 4>>("f64.decode.d128"),
      // Tensor cores (DMMA) for d, dv <= 64 and <= 128: DmmaConfig<warps,
      // BN, DK, DV, MINB>. Fewer registers for more warps spill and lose
      // (docs/log/cuda-tuning.md, "Runs 19-22").
      dmma<DmmaConfig<4, 32, 64, 64, 2>>("f64.dmma.64x32.d64"),
      dmma<DmmaConfig<8, 16, 128, 128, 1>>("f64.dmma.128x16.d128"),
      // DFMA: any head dim, in chunks.
      tiled<TiledConfig<double, 64, 32, 32, 64, 16, 8>>("f64.tiled.64x32.any", 0, 0),
  };
  return v;
}

}  // namespace strata::cuda
