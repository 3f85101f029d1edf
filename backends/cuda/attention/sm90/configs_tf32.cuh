#pragma once
// One FlashVariant per configuration of the TF32 wgmma attention kernel
// (sm90/kernel_tf32.cuh): the only place that launches it with <<<>>>.
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/sm90/kernel_tf32.cuh"

namespace strata::cuda {

template <int D, int WG, int BN, bool X3, int MINB, bool VREG>
void wgmma_tf32_launch(const FlashArgs& a, int grid, std::size_t smem, cudaStream_t st) {
  flash::flash_wgmma_tf32_kernel<D, WG, BN, X3, MINB, VREG>
      <<<grid, flash::WgmmaTf32Config<D, WG, BN, X3, VREG>::kThreads, smem, st>>>(a);
}

// V reaches its transposed shared-memory slot through registers (one V^T
// slot, a second barrier per tile) or a staging tile (two slots).
inline constexpr bool kVThroughRegisters = true, kVStaged = false;

// Each table holds one configuration per head dim: the default of its
// precision on sm_90a (the launcher, dispatch/launch_tf32.cu, registers the
// wgmma kernels ahead of mma.sync).
template <int D, int WG, int BN, bool X3, int MINB, bool VREG = kVStaged>
FlashVariant make_wgmma_tf32_variant(const char* name) {
  using C = flash::WgmmaTf32Config<D, WG, BN, X3, VREG>;
  return default_variant(name, DType::f32, D, C::kBM, BN, C::kThreads, C::kSmem,
                         &flash::flash_wgmma_tf32_kernel<D, WG, BN, X3, MINB, VREG>,
                         &wgmma_tf32_launch<D, WG, BN, X3, MINB, VREG>);
}

}  // namespace strata::cuda
