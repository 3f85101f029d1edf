#pragma once
// Host entry points of the bf16/f16 tensor-core attention kernel
// (flash_mma_launch.cu), free of CUDA headers so that register.cpp stays
// plain C++.
#include <string>

#include "strata/attention_args.hpp"

namespace strata {
class Registry;
namespace cuda {

// Registers softmax_attention for bf16 and f16 on "cuda":
// "cuda.attention.mma_<dt>_d64" (d, dv <= 64), "..._d128" (<= 128), and
// "cuda.attention.mma_<dt>_via_f32" for larger head dims (the inputs are
// converted to f32 on the device and the f32 kernel runs).
void register_cuda_flash_mma(Registry& r);

// The configuration the launcher picks for `a` (bench labels, tests).
std::string flash_mma_plan(const AttentionArgs& a);

}  // namespace cuda
}  // namespace strata
