#pragma once
// The check the cuda attention tests share: a case through the
// cross-backend harness, against the f64 reference of the same rounded
// inputs, and the cuda backend's result required to pass: no error, every
// output element written, guard regions intact, NaN and inf exactly where
// the reference has them, within tolerance; kernel_ok judges the registry
// name of the kernel that ran.
#include <functional>
#include <string>

#include "catch.hpp"
#include "strata/harness.hpp"

namespace strata_test {

inline void require_cuda_attention_pass(
    const strata::harness::AttentionCase& c,
    const std::function<bool(const std::string&)>& kernel_ok = [](const std::string&) {
      return true;
    }) {
  const strata::harness::CaseReport r = strata::harness::run_attention_case(c);
  INFO(r.summary());
  bool saw_cuda = false;
  for (const auto& b : r.results) {
    if (b.backend != "cuda") continue;
    saw_cuda = true;
    CHECK(b.error.empty());
    CHECK(kernel_ok(b.kernel));
    CHECK(b.fully_written);
    CHECK(b.guard_intact);
    CHECK(b.nan_mismatch == 0);
    CHECK(b.inf_mismatch == 0);
    CHECK(b.pass);
  }
  CHECK(saw_cuda);
}

// The same, with the kernel that ran required to have a registry name that
// starts with prefix.
inline void require_cuda_attention_pass_on(const strata::harness::AttentionCase& c,
                                           const std::string& prefix) {
  require_cuda_attention_pass(c,
                              [&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

}  // namespace strata_test
