#pragma once
// The compiled configurations of the tensor-core attention kernels
// (flash_mma.cuh on mma.sync, flash_wgmma.cuh on wgmma) that the launcher (flash_mma_launch.cu)
// chooses from. The bf16 and f16 tables compile in files of their own, in parallel.
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "cuda/attention/flash_mma_args.hpp"
#include "strata/dtype.hpp"

namespace strata::cuda {

struct FlashVariant {
  const char* name;  // e.g. "bf16.d128.128x64.s2"
  DType dtype;
  int D;             // head dim the kernel is compiled for (d and dv <= D)
  int bm, bn;        // query rows per CTA, keys per tile
  int threads;       // bm / 16 warps
  std::size_t smem;  // dynamic shared memory bytes
  bool is_default;   // chosen without STRATA_FLASH_VARIANT
  const void* kernel;
  void (*launch)(const FlashArgs&, int grid, std::size_t smem, cudaStream_t);
  // Chosen instead of the default when the default's grid would leave
  // multiprocessors idle (fewer CTAs than SMs): smaller query tiles.
  bool small_grid = false;
  // Reads q, k and v rows in 8-byte pieces: taken (instead of packing them)
  // when their rows are only 8-byte aligned, e.g. d = 100.
  bool pieces8 = false;
  // The q/k head dim S = Q K^T covers: D, or fewer columns for the wgmma
  // configurations that skip S's zero-padded k-steps (KQ in flash_wgmma.cuh).
  int qk_cols = 0;  // 0: D
  // Splits the keys of a tile of rows over several CTAs when the grid is
  // too small to fill the GPU (FlashArgs::splits; the wgmma kernel).
  bool splits_keys = false;
};

const std::vector<FlashVariant>& flash_variants_bf16();
const std::vector<FlashVariant>& flash_variants_f16();
// The wgmma kernel's (flash_wgmma.cuh, sm_90a builds; empty otherwise).
const std::vector<FlashVariant>& wgmma_variants_bf16();
const std::vector<FlashVariant>& wgmma_variants_f16();

}  // namespace strata::cuda
