#pragma once
// The built-in problem's tolerance, by the cross-backend harness's rule
// (harness/src/run_case.cpp): a correct kernel in dtype T differs from the
// f64 truth by rounding only, of the order of a naive computation carried out
// entirely in T; so the bound is 3x that naive error, measured on this very
// problem, plus a floor (1e-6 relative for f32, 1e-12 for f64). It grows
// with N where rounding does (a long-N f32 row sums millions of terms), so
// correct results pass at any size, while indexing or masking bugs, whose
// errors are O(1), still fail.
#include "strata/attention.hpp"
#include "strata/tensor.hpp"

namespace strata::cli {

struct Tolerance {
  double rel_fro = 0, max_abs = 0;      // the bounds
  double naive_rel = 0, naive_abs = 0;  // what the naive computation achieved
  // f32 with --precision medium: the bounds also allow 3x the error of exact
  // arithmetic on TF32-rounded q, k, v (docs/attention.md, "Precision").
  bool tf32 = false;
  double tf32_rel = 0, tf32_abs = 0;
};

// q, k, v: host tensors in the problem's dtype; truth: the f64 reference
// output for them. Runs the naive same-dtype computation (the reference
// kernel with its accumulator in q's dtype): it needs as much memory as the
// reference backend does. f32 with opt.precision == medium adds the TF32
// term (the reference in f64 on TF32-rounded inputs, 3x its error).
Tolerance self_calibrated_tolerance(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& opt, const Tensor& truth);

}  // namespace strata::cli
