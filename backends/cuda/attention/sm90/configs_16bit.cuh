#pragma once
// One FlashVariant per configuration of the wgmma attention kernel
// (sm90/kernel_16bit.cuh): the only place that launches it with <<<>>>.
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/sm90/kernel_16bit.cuh"

namespace strata::cuda {

template <class T, int D, int WG, int BN, int MINB, bool RAW, bool P8 = false, int KQ = D / 16,
          int NV = D>
void wgmma_launch(const FlashArgs& a, int grid, std::size_t smem, cudaStream_t st) {
  flash::flash_wgmma_kernel<T, D, WG, BN, MINB, RAW, P8, KQ, NV>
      <<<grid, flash::WgmmaConfig<T, D, WG, BN>::kThreads, smem, st>>>(a);
}

template <class T, int D, int WG, int BN, int MINB, bool RAW, bool P8 = false, int KQ = D / 16,
          int NV = D>
FlashVariant make_wgmma_variant(const char* name, DType dt, bool is_default,
                                bool small_grid = false) {
  using C = flash::WgmmaConfig<T, D, WG, BN>;
  return FlashVariant{name,
                      dt,
                      D,
                      C::kBM,
                      BN,
                      C::kThreads,
                      C::kSmem,
                      is_default,
                      reinterpret_cast<const void*>(
                          &flash::flash_wgmma_kernel<T, D, WG, BN, MINB, RAW, P8, KQ, NV>),
                      &wgmma_launch<T, D, WG, BN, MINB, RAW, P8, KQ, NV>,
                      small_grid,
                      P8,
                      16 * KQ,
                      true};
}

// The compiled wgmma configurations for T (bf16 or f16); names leave the
// dtype out so STRATA_FLASH_VARIANT=<name> forces one for both. The
// defaults are the measured best per head dim (docs/cuda-tuning.md); the
// launcher takes, among those of the call's D and flags, the narrowest S
// that covers d: ".k<n>" computes S = Q K^T over n columns only (KQ = n /
// 16; P V still over all D, V's panels are whole). Flags: a grid of fewer
// CTAs than SMs that split-KV cannot fill takes 64-row tiles (small_grid),
// rows only 8-byte aligned a configuration that reads 8-byte pieces (P8).
// Every one keeps the P V of a tile in flight with the next tile's S
// (".ov"). Empty without sm_90a (STRATA_CUDA_WGMMA).
template <class T>
std::vector<FlashVariant> wgmma_configs(DType dt) {
#if defined(STRATA_CUDA_WGMMA)
  // <T, D, warpgroups (64 rows each), BN, CTAs per SM the registers must
  // allow, raw scores in unmasked tiles, 8-byte pieces, k-steps of S (D / 16)>
  return {
      make_wgmma_variant<T, 64, 1, 128, 2, true>("wg.d64.64x128.ov.b2.raw", dt, true),
      make_wgmma_variant<T, 64, 2, 128, 1, true>("wg.d64.128x128.ov.raw", dt, false),
      // Causal d 64 candidates (session 12): 64 keys per tile leave no
      // fully masked half tile on the diagonal of a 64-row tile (128 keys
      // waste 64 columns on every other row tile, ~1.6% of a causal call).
      make_wgmma_variant<T, 64, 1, 64, 2, true>("wg.d64.64x64.ov.b2.raw", dt, false),
      make_wgmma_variant<T, 64, 1, 64, 3, true>("wg.d64.64x64.ov.b3.raw", dt, false),
      make_wgmma_variant<T, 128, 2, 128, 1, false>("wg.d128.128x128.ov", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, true>("wg.d128.128x128.ov.raw", dt, false),
      make_wgmma_variant<T, 128, 1, 64, 2, false>("wg.d128.64x64.ov.b2", dt, true, true),
      // d 80, 96 and 112 on the d 128 tiles, S over fewer columns (H200, run
      // s11r1: d 80 268 -> 292 TFLOP/s, d 96 324 -> 343, d 100 282 -> 286).
      make_wgmma_variant<T, 128, 2, 128, 1, false, false, 5>("wg.d128.128x128.ov.k80", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, false, false, 6>("wg.d128.128x128.ov.k96", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, false, false, 7>("wg.d128.128x128.ov.k112", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, false, true>("wg.d128.128x128.ov.p8", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, false, true, 7>("wg.d128.128x128.ov.p8.k112", dt, true),
      // d 129-192 and 193-256 (run s11r1, B1 H32 4096: d 192 459 TFLOP/s on
      // 128x96 against 434 on 128x64, d 256 483; 9.4 and 7.8 through f32
      // before): the largest BN without spills under ptxas (128x112 and
      // 256's 128x80, FlashAttention-3's tiles, spill 112 and 96 bytes).
      make_wgmma_variant<T, 192, 2, 96, 1, false>("wg.d192.128x96.ov", dt, true),
      make_wgmma_variant<T, 192, 2, 64, 1, false>("wg.d192.128x64.ov", dt, false),
      make_wgmma_variant<T, 256, 2, 64, 1, false>("wg.d256.128x64.ov", dt, true),
  };
#else
  (void)dt;
  return {};
#endif
}

// The configurations whose P V covers only kWgmmaNarrowV value columns
// (NV in sm90/kernel_16bit.cuh; ".v<n>"): a call with dv <= kWgmmaNarrowV takes
// them ahead of wgmma_configs' (the launcher's wgmma_table). The 16-byte-row
// one is the default of d 97-104 (q/k/v rows only 8-byte aligned reach it
// through the pad pass, dispatch/pad_rows.cu); the 8-byte-piece one only forced, so
// that STRATA_FLASH_PAD=0 keeps the ".p8.k112" path for the A/B.
template <class T>
std::vector<FlashVariant> wgmma_narrow_v_configs(DType dt) {
#if defined(STRATA_CUDA_WGMMA)
  static_assert(kWgmmaNarrowV == 104, "the names below say v104");
  return {
      make_wgmma_variant<T, 128, 2, 128, 1, false, false, 7, kWgmmaNarrowV>(
          "wg.d128.128x128.ov.k112.v104", dt, true),
      make_wgmma_variant<T, 128, 2, 128, 1, false, true, 7, kWgmmaNarrowV>(
          "wg.d128.128x128.ov.p8.k112.v104", dt, false),
  };
#else
  (void)dt;
  return {};
#endif
}

}  // namespace strata::cuda
