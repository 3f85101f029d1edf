// f32 decode and tiled variants. TiledConfig<T, BM, BN, DK, DV, RG, CG,
// MINB>: BM query rows x BN keys per step, DK head-dim chunk (Q stays in
// shared memory when d <= DK), DV output columns per block, RG x CG threads,
// MINB blocks per SM promised to the register allocator. The candidates
// these won against: docs/log/cuda-tuning.md, "Runs".
#include "cuda/attention/decode/variant_make.cuh"
#include "cuda/attention/ffma/variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_f32() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<float, 4, 1, 1, 8>>("f32.decode.d128"),
      decode<DecodeConfig<float, 4, 2, 2, 4>>("f32.decode.d256"),
      // d, dv <= 64 above the pipelined kernel's small calls: three blocks
      // per SM, spilling, beat two without spills (the kernel waits on
      // latency, not on shared memory).
      tiled<TiledConfig<float, 64, 64, 64, 64, 16, 8, 3>>("f32.tiled.64x64.d64.3_per_sm", 64, 64),
      // Any head dim, in chunks of 32 columns.
      tiled<TiledConfig<float, 64, 32, 32, 64, 16, 8>>("f32.tiled.64x32.any", 0, 0),
  };
  return v;
}

}  // namespace strata::cuda
