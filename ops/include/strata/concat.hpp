#pragma once
// Concatenation along a dim: one copy_ per input into a narrow view of the
// output, so it runs on every backend and layout copy_ does.
#include <vector>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// xs[i] [..., n_i, ...] (same dtype and device; other dims equal)  ->  out [..., sum n_i, ...]
Tensor concat(const std::vector<Tensor>& xs, int dim, const OpOptions& opt = {});
void concat_out(const Tensor& out, const std::vector<Tensor>& xs, int dim,
                const OpOptions& opt = {});

}  // namespace strata
