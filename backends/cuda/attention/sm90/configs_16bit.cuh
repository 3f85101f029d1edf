#pragma once
// One FlashVariant per configuration of the wgmma attention kernel
// (sm90/kernel_16bit.cuh): the only place that launches it with <<<>>>.
#include <type_traits>
#include <vector>

#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/sm90/kernel_16bit.cuh"

namespace strata::cuda {

template <class T, int D, int WG, int BN, int MINB, bool RAW, bool P8, int KQ, int NV>
void wgmma_launch(const FlashArgs& a, int grid, std::size_t smem, cudaStream_t st) {
  flash::flash_wgmma_kernel<T, D, WG, BN, MINB, RAW, P8, KQ, NV>
      <<<grid, flash::WgmmaConfig<T, D, WG, BN>::kThreads, smem, st>>>(a);
}

// Unmasked tiles keep raw scores (the scale folded into the exp2's FFMA) or
// scale every score first; q, k and v rows read in 16-byte chunks or, when
// they are only 8-byte aligned, in 8-byte pieces.
inline constexpr bool kRawScores = true, kScaledScores = false;
inline constexpr bool kPieces8 = true, kChunks16 = false;

template <class T, int D, int WG, int BN, int MINB, bool RAW, bool P8 = kChunks16, int KQ = D / 16,
          int NV = D>
FlashVariant make_wgmma_variant(const char* name, DType dt) {
  using C = flash::WgmmaConfig<T, D, WG, BN>;
  FlashVariant v = default_variant(name, dt, D, C::kBM, BN, C::kThreads, C::kSmem,
                                   &flash::flash_wgmma_kernel<T, D, WG, BN, MINB, RAW, P8, KQ, NV>,
                                   &wgmma_launch<T, D, WG, BN, MINB, RAW, P8, KQ, NV>);
  v.pieces8 = P8;
  v.qk_cols = 16 * KQ;
  v.splits_keys = true;
  return v;
}

// The configuration a grid of fewer CTAs than SMs takes where split-KV
// cannot fill the GPU (too few keys): smaller query tiles.
inline FlashVariant for_small_grid(FlashVariant v) {
  v.small_grid = true;
  return v;
}

// The wgmma configurations for T (bf16 or f16); names leave the dtype out
// so STRATA_FLASH_VARIANT=<name> forces one for both. The launcher takes,
// among those of the call's D and flags, the narrowest S that covers d:
// ".qk_cols<n>" computes S = Q K^T over n columns only (KQ = n / 16; P V still
// over all D, V's panels are whole). Flags: a grid of fewer CTAs than SMs
// that split-KV cannot fill takes 64-row tiles (for_small_grid), rows only
// 8-byte aligned a configuration that reads 8-byte pieces. Every one keeps
// the P V of a tile in flight with the next tile's S. The
// configurations these won against: docs/log/cuda-tuning.md, "bf16/f16 on
// wgmma" and the sections after it. Empty without sm_90a
// (STRATA_CUDA_WGMMA).
template <class T>
std::vector<FlashVariant> wgmma_configs(DType dt) {
#if defined(STRATA_CUDA_WGMMA)
  // <T, D, warpgroups (64 rows each), BN, CTAs per SM the registers must
  // allow, scores, row reads, k-steps of S (D / 16)>
  return {
      // d 64: one warpgroup per CTA at two CTAs per SM, whose warpgroups are
      // not in lockstep (one's softmax hides the other's MMAs).
      make_wgmma_variant<T, 64, 1, 128, 2, kRawScores>("wgmma.d64.64x128.2_per_sm.raw_scores", dt),
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores>("wgmma.d128.128x128", dt),
      for_small_grid(
          make_wgmma_variant<T, 128, 1, 64, 2, kScaledScores>("wgmma.d128.64x64.2_per_sm", dt)),
      // d 80, 96 and 112 on the d 128 tiles, S over fewer columns.
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kChunks16, 5>(
          "wgmma.d128.128x128.qk_cols80", dt),
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kChunks16, 6>(
          "wgmma.d128.128x128.qk_cols96", dt),
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kChunks16, 7>(
          "wgmma.d128.128x128.qk_cols112", dt),
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kPieces8>(
          "wgmma.d128.128x128.8_byte_loads", dt),
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kPieces8, 7>(
          "wgmma.d128.128x128.8_byte_loads.qk_cols112", dt),
      // d 129-192 and 193-256: the largest BN without spills under ptxas
      // (FlashAttention-3's 128x112 and, at d 256, 128x80 spill).
      make_wgmma_variant<T, 192, 2, 96, 1, kScaledScores>("wgmma.d192.128x96", dt),
      make_wgmma_variant<T, 256, 2, 64, 1, kScaledScores>("wgmma.d256.128x64", dt),
  };
#else
  (void)dt;
  return {};
#endif
}

// The configuration whose P V covers only kWgmmaNarrowV value columns (NV
// in sm90/kernel_16bit.cuh; ".v_cols<n>"): a call with dv <= kWgmmaNarrowV takes
// it ahead of wgmma_configs' (the launcher's wgmma_table), the default of
// d 97-104 on 16-byte rows (rows only 8-byte aligned reach it through the
// pad pass, dispatch/pad_rows.cu, or take ".8_byte_loads.qk_cols112").
template <class T>
std::vector<FlashVariant> wgmma_narrow_v_configs(DType dt) {
#if defined(STRATA_CUDA_WGMMA)
  static_assert(kWgmmaNarrowV == 104, "the name below says v104");
  return {
      make_wgmma_variant<T, 128, 2, 128, 1, kScaledScores, kChunks16, 7, kWgmmaNarrowV>(
          "wgmma.d128.128x128.qk_cols112.v_cols104", dt),
  };
#else
  (void)dt;
  return {};
#endif
}

template <class T>
const WgmmaTables& wgmma_tables() {
  static const WgmmaTables t = [] {
    const DType dt = std::is_same_v<T, __half> ? DType::f16 : DType::bf16;
    WgmmaTables w{wgmma_configs<T>(dt), wgmma_narrow_v_configs<T>(dt)};
    w.narrow_v.insert(w.narrow_v.end(), w.all.begin(), w.all.end());
    return w;
  }();
  return t;
}

}  // namespace strata::cuda
