#pragma once
// `strata check`'s second part: every op's descriptor (strata/op_harness.hpp)
// on every available backend against the reference in float64.
#include <functional>
#include <string>

namespace strata::cli {

// Runs the attention sweep (`attention`, when a sweep group matches
// `only`) and the op runner's families (groups "ops:<family>" that contain
// `only`; all when `only` is empty); the worse exit status of the two.
// Throws UsageError when `only` matches neither.
int run_check_with_ops(bool full, const std::string& only, const std::function<int()>& attention);

// The op runner alone, over the families whose group name contains `only`.
int run_op_checks(const std::string& only);

}  // namespace strata::cli
