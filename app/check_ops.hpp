#pragma once
// `strata check`'s second and third parts: every op's descriptor
// (strata/op_harness.hpp) on every available backend against the reference
// in float64, then every descriptor's gradients (check_grads.cpp).
#include <functional>
#include <string>

namespace strata::cli {

// Runs the attention sweep (`attention`, when a sweep group matches
// `only`), the op runner's families (groups "ops:<family>" that contain
// `only`; all when `only` is empty) and the gradient runner's (groups
// "grad:<family>"); the worst exit status of the three. Throws UsageError
// when `only` matches none.
int run_check_with_ops(bool full, const std::string& only, const std::function<int()>& attention);

// The op runner alone, over the families whose group name contains `only`.
int run_op_checks(const std::string& only);

// The gradient runner alone, over the families whose group "grad:<family>"
// contains `only`; and whether any does.
int run_grad_checks(const std::string& only);
bool grad_groups_match(const std::string& only);

}  // namespace strata::cli
