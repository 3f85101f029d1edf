#pragma once
// Entry points of the cpu backend's softmax_attention (registered in
// register.cpp).
#include <string>

#include "strata/attention_args.hpp"

namespace strata::cpu {

// q [B..., Hq, M, d], k [B..., Hkv, N, d], v [B..., Hkv, N, dv] ->
// out [B..., Hq, M, dv] (+ lse [B..., Hq, M]); T = float or double.
template <class T>
void attention_cpu(const AttentionArgs& a);

// The backward (attention_backward_cpu.cpp): dq, dk, dv from the forward's
// out and lse; T = float or double.
template <class T>
void attention_backward_cpu(const AttentionBackwardArgs& g);

// "" when attention_cpu can run `a`, else the reason.
const char* attention_cpu_supports(const AttentionArgs& a);

// Instruction set the kernels use on this machine ("avx512", "avx2", "generic").
const char* isa_name();

}  // namespace strata::cpu
