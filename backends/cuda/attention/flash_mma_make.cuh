#pragma once
// One FlashVariant per kernel configuration: the only place that launches
// flash_mma_kernel with <<<>>>.
#include "cuda/attention/flash_mma.cuh"
#include "cuda/attention/flash_mma_variants.hpp"

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

}  // namespace strata::cuda
