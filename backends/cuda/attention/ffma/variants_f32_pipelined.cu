// f32 pipelined variants (ffma/pipelined.cuh):
// PipeConfig<BM, BN, DK, DV, RG, CG, KC, STAGES, MINB>, serving d <= DK,
// dv <= DV: BM query rows x BN keys per tile, K consumed in head-dim chunks
// of KC, RG x CG threads, STAGES shared buffers, MINB blocks per SM promised
// to the register allocator. The tiles and thread counts these won against:
// docs/log/cuda-tuning.md, "Runs 6-10".
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32_pipelined() {
  static const std::vector<Variant> v = {
      // 64 < d, dv <= 128: 128 x 64 tiles over 512 threads (4 x 4 score and
      // 4 x 8 output tiles per thread, 16 warps per SM).
      pipe<PipeConfig<128, 64, 128, 128, 32, 16, 32, 4, 1>>(
          "f32.pipelined.128x64.d128.512_threads"),
      // d, dv <= 64 when the call has at most 2^24 scores: 64-row tiles over
      // 256 threads give one head more warps; larger calls stay on the
      // tiled kernel (ffma/variants_f32.cu).
      for_small(
          pipe<PipeConfig<64, 64, 64, 64, 16, 16, 32, 4, 2>>("f32.pipelined.64x64.d64.256_threads"),
          std::int64_t(1) << 24),
  };
  return v;
}

}  // namespace strata::cuda
