#pragma once
// The launchers of the backward's kernels (the only places with <<<>>> for
// them), called by the backward's host side (backward/launch.cu) with the
// device current and the workspaces in place.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"
#include "strata/error.hpp"

namespace strata::cuda::bwd {

inline constexpr const char* kOp = "softmax_attention_backward";

// A grid of `blocks` CTAs, checked to fit one launch's x dimension.
inline std::int64_t checked_grid(std::int64_t blocks) {
  check(blocks <= 0x7fffffff, kOp, "cuda: problem too large for one launch (", blocks, " blocks)");
  return blocks;
}

// preprocess.cuh on every row of the workspaces (launch_ffma.cu).
void launch_preprocess(const BwdParams& p, cudaStream_t st);

// The FFMA kernels' tile (32 or 8 rows) for these head dims on device dev:
// the largest whose shared memory the device grants; 0 when none fits.
int ffma_tile(const AttentionArgs& a, int dev);
// Bytes of shared memory of that tile.
std::size_t ffma_smem(const AttentionArgs& a, int tile);
// dK, dV then dQ on the FFMA kernels (launch_ffma.cu); tile from ffma_tile.
void launch_ffma(BwdParams p, int tile, int dev, cudaStream_t st);

// The largest head dim the mma kernels serve.
inline constexpr std::int64_t kMmaMaxHeadDim = 128;
// dK, dV then dQ on the mma kernels (launch_mma.cu): bf16/f16, d and dv up to
// kMmaMaxHeadDim, q, k, v and dout readable in 16-byte chunks.
void launch_mma(BwdParams p, int dev, cudaStream_t st);

}  // namespace strata::cuda::bwd
