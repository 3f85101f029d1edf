#pragma once
// Cross entropy of logits against class indices, fused: one pass over each
// row computes its log-sum-exp and the loss, and the backward writes the
// logits' gradient in one more pass (docs/guide/ops.md, "cross_entropy").
#include <cstdint>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

struct CrossEntropyOptions {
  enum class Reduction { mean, sum, none };
  // Rows whose target is this value contribute nothing (loss 0, gradient 0)
  // and are not counted by `mean`; it may lie inside [0, V).
  std::int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;
};

// logits [..., V] (f32 f64 f16 bf16, any strides), target [...] (i32 or i64)
//   ->  none: out [...]; sum, mean: out [] (0-d)
// out is f32 (f64 for f64 logits). Per row r with target t != ignore_index:
// loss_r = logsumexp(logits[r, :]) - logits[r, t], in f32 (f64 for f64).
// sum adds the rows' losses; mean divides that by the number of rows not
// ignored, so a call whose every row is ignored (or that has no rows) gives
// NaN, as PyTorch's 0 / 0 does. A row holding NaN or +inf gives NaN; -inf
// logits (masked classes) are fine unless the target is one.
// A target outside [0, V) that is not ignore_index is a strata::Error naming
// it and its row, raised before anything is written (on cuda the targets are
// checked on the device first, except while the stream is being captured,
// where such a row's loss is NaN). lse [...], optional, receives every row's
// logsumexp in out's dtype (what cross_entropy_backward_out takes; autograd
// sends no gradient through it). The op allocates per-row scratch, so it
// is not for a CUDA graph body.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& ce = {},
                     const OpOptions& opt = {});
void cross_entropy_out(const Tensor& out, const Tensor& logits, const Tensor& target,
                       const CrossEntropyOptions& ce = {}, const OpOptions& opt = {},
                       const Tensor& lse = {});

// The backward, what autograd runs: for every row r whose target t is not
// ignore_index,
//   grad_logits[r, j] (+)= grad[r] * (exp(logits[r, j] - lse[r]) - (j == t))
// and 0 (nothing added) for ignored rows; one pass over the logits.
// grad_logits has logits' shape and dtype (any strides); grad, any floating
// dtype, broadcasts to [...] (a mean's gradient is grad_out / count, a sum's
// grad_out, both broadcast); lse [...] is the forward's, in f32 (f64 for f64
// logits). With `accumulate` the result is added into grad_logits.
// Targets are checked as cross_entropy checks them.
void cross_entropy_backward_out(const Tensor& grad_logits, const Tensor& grad, const Tensor& logits,
                                const Tensor& target, const Tensor& lse,
                                std::int64_t ignore_index = -100, bool accumulate = false,
                                const OpOptions& opt = {});

}  // namespace strata
