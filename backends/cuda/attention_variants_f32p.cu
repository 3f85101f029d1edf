// f32 pipelined variants (attention_pipelined.cuh):
// PipeConfig<BM, BN, DK, DV, RG, CG, KC, STAGES, MINB>, serving d <= DK,
// dv <= DV: BM query rows x BN keys per tile, K consumed in head-dim chunks
// of KC, RG x CG threads, STAGES shared buffers, MINB blocks per SM promised
// to the register allocator.
#include "cuda/attention_variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32p() {
  static const std::vector<Variant> v = {
      // Default for 64 < d, dv <= 128 (runs 6 and 8, b1h32 L8192 d128: 31.7
      // TFLOP/s against 27.9 for the transposed-tile kernel it replaced).
      pipe<PipeConfig<128, 64, 128, 128, 16, 16, 32, 4, 1>>("f32.p.128x64.d128", true),
      // Default for d, dv <= 64 when the call has at most 2^22 scores: small
      // tiles give one head more blocks (run 7, M=N=1024: 9.7 TFLOP/s against
      // 7.6; M=N=4096: 23.6 against 24.0, so larger calls keep the tiled kernel).
      for_small(pipe<PipeConfig<32, 64, 64, 64, 8, 16, 32, 3, 4>>("f32.p.32x64.d64.m4", true),
                std::int64_t(1) << 22),
      // Tuning candidates, only by STRATA_CUDA_VARIANT=name.
      pipe<PipeConfig<64, 64, 128, 128, 8, 16, 32, 4, 2>>("f32.p.64x64.d128", false),
      pipe<PipeConfig<128, 32, 128, 128, 16, 16, 32, 4, 1>>("f32.p.128x32.d128", false),
      pipe<PipeConfig<64, 64, 64, 64, 8, 16, 32, 4, 3>>("f32.p.64x64.d64", false),
  };
  return v;
}

}  // namespace strata::cuda
