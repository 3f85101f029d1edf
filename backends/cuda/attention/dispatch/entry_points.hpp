#pragma once
// Host-side entry points of the cuda backend's softmax_attention kernels
// (attention_launch.cu), free of CUDA headers so that register.cpp compiles
// as plain C++. Arguments come validated from the front end, with device
// pointers.
#include <string>

#include "strata/attention_args.hpp"

namespace strata::cuda {

void attention_f32(const AttentionArgs& a);
void attention_f64(const AttentionArgs& a);
// bf16 / f16 with M <= 8: the split-KV decode kernel on the narrow inputs
// (f32 arithmetic, lse f32, out rounded once). attention_decode_supports
// says "" when it serves `a` (bf16/f16, M <= 8, d and dv <= 256).
void attention_bf16_decode(const AttentionArgs& a);
void attention_f16_decode(const AttentionArgs& a);
std::string attention_decode_supports(const AttentionArgs& a);
// "" when the cuda kernels can run `a`, else the reason.
std::string attention_supports(const AttentionArgs& a);
// Kernel variant the launcher would pick (for docs/bench labels); bf16/f16
// only for calls attention_decode_supports accepts.
std::string attention_plan(const AttentionArgs& a);

}  // namespace strata::cuda
