#pragma once
// The compiled configurations of the f32 TF32 tensor-core attention kernel
// (flash_tf32.cuh) that its launcher (flash_tf32_launch.cu) chooses from:
// one table per precision, each compiled in a file of its own. Entries are
// FlashVariant (flash_mma_variants.hpp) with dtype f32.
#include <vector>

#include "cuda/attention/flash_mma_variants.hpp"

namespace strata::cuda {

const std::vector<FlashVariant>& flash_variants_tf32x3();  // high: 3xTF32
const std::vector<FlashVariant>& flash_variants_tf32();    // medium: TF32
// The wgmma kernel's (flash_wgmma_tf32.cuh; the defaults on sm_90a, empty otherwise).
const std::vector<FlashVariant>& wgmma_variants_tf32x3();
const std::vector<FlashVariant>& wgmma_variants_tf32();

}  // namespace strata::cuda
