// f32 pipelined variants (ffma/pipelined.cuh):
// PipeConfig<BM, BN, DK, DV, RG, CG, KC, STAGES, MINB>, serving d <= DK,
// dv <= DV: BM query rows x BN keys per tile, K consumed in head-dim chunks
// of KC, RG x CG threads, STAGES shared buffers, MINB blocks per SM promised
// to the register allocator.
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32_pipelined() {
  static const std::vector<Variant> v = {
      // Default for 64 < d, dv <= 128: 128 x 64 tiles over 512 threads (4 x 4
      // score and 4 x 8 output tiles per thread, 16 warps per SM). Run 11,
      // b1h32 L8192 d128: 32.1 TFLOP/s, against 31.7 with 256 threads (8 x 4
      // and 8 x 8 tiles, 8 warps) and 27.9 for the transposed-tile kernel
      // these replaced.
      pipe<PipeConfig<128, 64, 128, 128, 32, 16, 32, 4, 1>>("f32.p.128x64.d128.nt512", true),
      // Default for d, dv <= 64 when the call has at most 2^24 scores: 64-row
      // tiles over 256 threads give one head more warps (run 11: M=N=1024
      // 9.7 TFLOP/s, M=N=4096 25.7, against 7.6 and 24.0 for the tiled kernel,
      // which stays above: b4h16 L4096 29.1 against 28.9).
      for_small(pipe<PipeConfig<64, 64, 64, 64, 16, 16, 32, 4, 2>>("f32.p.64x64.d64.nt256", true),
                std::int64_t(1) << 24),
      // Tuning candidates, only by STRATA_CUDA_VARIANT=name.
      pipe<PipeConfig<128, 64, 128, 128, 16, 16, 32, 4, 1>>("f32.p.128x64.d128", false),
      pipe<PipeConfig<64, 64, 128, 128, 16, 16, 32, 4, 2>>("f32.p.64x64.d128.nt256", false),
      pipe<PipeConfig<32, 64, 64, 64, 8, 16, 32, 3, 4>>("f32.p.32x64.d64.m4", false),
  };
  return v;
}

}  // namespace strata::cuda
