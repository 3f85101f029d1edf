#pragma once
// One FlashVariant per configuration of the TF32 kernel: the only place
// that launches flash_tf32_kernel with <<<>>>.
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/sm80/kernel_tf32.cuh"

namespace strata::cuda {

template <int D, int BM, int BN, int STAGES, bool X3, bool QREG, int MINB, int GS, int GP>
void flash_tf32_launch(const FlashArgs& a, int grid, std::size_t smem, cudaStream_t st) {
  flash::flash_tf32_kernel<D, BM, BN, STAGES, X3, QREG, MINB, GS, GP>
      <<<grid, flash::Tf32Config<D, BM>::kThreads, smem, st>>>(a);
}

// GS, GP: high's summation groups (flash_tf32_kernel); 1, 1 for medium,
// which ignores them.
template <int D, int BM, int BN, int STAGES, bool X3, bool QREG, int MINB, int GS = 1, int GP = 1>
FlashVariant make_tf32_variant(const char* name) {
  // Q, then STAGES tiles of K and of V, rows of D + 4 floats.
  const std::size_t smem =
      std::size_t(BM + 2 * STAGES * BN) * flash::Tf32Config<D, BM>::kPitch * sizeof(float);
  return default_variant(name, DType::f32, D, BM, BN, flash::Tf32Config<D, BM>::kThreads, smem,
                         &flash::flash_tf32_kernel<D, BM, BN, STAGES, X3, QREG, MINB, GS, GP>,
                         &flash_tf32_launch<D, BM, BN, STAGES, X3, QREG, MINB, GS, GP>);
}

}  // namespace strata::cuda
