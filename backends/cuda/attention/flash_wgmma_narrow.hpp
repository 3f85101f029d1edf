#pragma once
// The wgmma tables with the configurations whose P V covers fewer value
// columns than their head dim (flash_wgmma.cuh's NV, flash_wgmma_make.cuh's
// wgmma_narrow_v_configs): FlashVariant has no field for the value columns,
// so a call reaches them only through these tables, which the launcher
// (flash_mma_launch.cu) uses for calls with dv <= kWgmmaNarrowV.
#include <vector>

#include "cuda/attention/flash_mma_variants.hpp"

namespace strata::cuda {

// The value columns of the narrow configurations: d 97-104 (d 100's rows
// padded to a multiple of 8).
inline constexpr int kWgmmaNarrowV = 104;

// The narrow configurations first, then every one of wgmma_variants_<dt>().
const std::vector<FlashVariant>& wgmma_variants_narrow_v_bf16();
const std::vector<FlashVariant>& wgmma_variants_narrow_v_f16();

}  // namespace strata::cuda
