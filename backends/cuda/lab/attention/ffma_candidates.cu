// Streaming candidates kept for tuning (candidates.hpp):
// - f32.pipelined.128x64.d128.256_threads: the pipelined 128 x 64 tiles over 256 threads (8 x 4
//   score and 8 x 8 output tiles, 8 warps per SM; 255 registers, no spill),
//   just behind the 512-thread default; the latency-bound side of the
//   register-file trade-off (docs/log/cuda-tuning.md, "Runs 6-10" and
//   "Register and spill report").
// - f32.pipelined.64x64.d128.256_threads: 64 x 64 tiles over 256 threads at two blocks per
//   SM, even with the default on the batched d 128 shape ("Runs 6-10").
// - f64.tiled.64x32.d64: the DFMA kernel the DMMA one replaced at d <= 64,
//   kept as its comparison ("Runs 19-22").
// Compiled only in a tuning build.
#include "cuda/attention/ffma/variant_make.cuh"
#include "cuda/lab/attention/candidates.hpp"

namespace strata::cuda::lab {

const std::vector<Variant>& ffma_candidates() {
  static const std::vector<Variant> v = {
      candidate(pipe<PipeConfig<128, 64, 128, 128, 16, 16, 32, 4, 1>>(
          "f32.pipelined.128x64.d128.256_threads")),
      candidate(pipe<PipeConfig<64, 64, 128, 128, 16, 16, 32, 4, 2>>(
          "f32.pipelined.64x64.d128.256_threads")),
      candidate(tiled<TiledConfig<double, 64, 32, 64, 64, 16, 8>>("f64.tiled.64x32.d64", 64, 64)),
  };
  return v;
}

}  // namespace strata::cuda::lab
