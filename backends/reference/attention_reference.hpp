#pragma once
// The reference softmax_attention kernel: materialises the M x N score matrix
// per (batch, head) and does every step in the accumulation type Acc. The
// registered kernels use Acc = double; the harness also runs Acc = T as the
// "naive computation in the input dtype" that tolerances are scaled from.
#include "strata/attention_args.hpp"

namespace strata::reference {

template <class T, class Acc>
void attention(const AttentionArgs& a);

extern template void attention<float, double>(const AttentionArgs&);
extern template void attention<double, double>(const AttentionArgs&);
extern template void attention<float, float>(const AttentionArgs&);

}  // namespace strata::reference
