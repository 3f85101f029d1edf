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
FlashVariant make_flash_variant(const char* name, DType dt, bool is_default) {
  const std::size_t smem = std::size_t(BM + 2 * STAGES * BN) * D * sizeof(T);
  return FlashVariant{
      name,
      dt,
      D,
      BM,
      BN,
      flash::Config<D, BM, MT>::kThreads,
      smem,
      is_default,
      reinterpret_cast<const void*>(&flash::flash_mma_kernel<T, D, BM, BN, STAGES, MT, QREG, MINB>),
      &flash_launch<T, D, BM, BN, STAGES, MT, QREG, MINB>};
}

// The compiled mma.sync configurations for T (bf16 or f16); names leave the
// dtype out so that STRATA_FLASH_VARIANT=<name> forces one for both; the
// defaults are the measured best per head dim (docs/cuda-tuning.md).
template <class T>
std::vector<FlashVariant> mma_configs(DType dt) {
  // <T, D, BM, BN, STAGES, MT (16-row blocks per warp), Q in registers, MIN_BLOCKS>
  return {
      make_flash_variant<T, 64, 64, 64, 3, 1, true, 2>("d64.64x64.s3", dt, true),
      make_flash_variant<T, 64, 128, 32, 2, 2, true, 2>("d64.128x32.s2.mt2", dt, false),
      make_flash_variant<T, 64, 128, 64, 2, 2, false, 2>("d64.128x64.s2.mt2.qs", dt, false),
      make_flash_variant<T, 128, 64, 64, 2, 1, true, 2>("d128.64x64.s2", dt, true),
      make_flash_variant<T, 128, 128, 32, 2, 2, false, 1>("d128.128x32.s2.mt2.qs", dt, false),
  };
}

}  // namespace strata::cuda
