#pragma once
// One FlashVariant per kernel configuration: the only place that launches
// flash_mma_kernel with <<<>>>.
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/sm80/kernel_16bit.cuh"

namespace strata::cuda {

template <class T, int D, int BM, int BN, int STAGES, int MT, bool QREG, int MINB>
void flash_launch(const FlashArgs& a, int grid, std::size_t smem, cudaStream_t st) {
  flash::flash_mma_kernel<T, D, BM, BN, STAGES, MT, QREG, MINB>
      <<<grid, flash::Config<D, BM, MT>::kThreads, smem, st>>>(a);
}

template <class T, int D, int BM, int BN, int STAGES, int MT, bool QREG, int MINB>
FlashVariant make_flash_variant(const char* name, DType dt) {
  // Q, then STAGES tiles of K and of V.
  const std::size_t smem = std::size_t(BM + 2 * STAGES * BN) * D * sizeof(T);
  return default_variant(name, dt, D, BM, BN, flash::Config<D, BM, MT>::kThreads, smem,
                         &flash::flash_mma_kernel<T, D, BM, BN, STAGES, MT, QREG, MINB>,
                         &flash_launch<T, D, BM, BN, STAGES, MT, QREG, MINB>);
}

// The mma.sync configurations for T (bf16 or f16): one per head dim, 4 warps
// of 16 rows at two CTAs per SM (more, smaller CTAs beat 8-warp ones at both
// head dims: docs/log/cuda-tuning.md, "bf16/f16 on mma.sync"). Names leave
// the dtype out so that STRATA_FLASH_VARIANT=<name> forces one for both.
template <class T>
std::vector<FlashVariant> mma_configs(DType dt) {
  // <T, D, BM, BN, STAGES, MT (16-row blocks per warp), Q fragments, MIN_BLOCKS>
  return {
      make_flash_variant<T, 64, 64, 64, 3, 1, kQInRegisters, 2>("mma.d64.64x64.3_stages", dt),
      make_flash_variant<T, 128, 64, 64, 2, 1, kQInRegisters, 2>("mma.d128.64x64.2_stages", dt),
  };
}

}  // namespace strata::cuda
