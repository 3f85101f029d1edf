// Every op's gradient through the generic runner (strata/op_harness.hpp:
// run_grad_case): on every available backend, dtype and layout against the
// reference backend in f64, and the reference's own gradient against
// central finite differences. Ops without a backward yet must say so
// (listed here, so that a new backward is noticed and checked).
#include <set>
#include <string>

#include "catch.hpp"
#include "strata/op_harness.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

// Families whose op has no backward yet (or, for the backward kernels
// themselves, no second derivative): under a tape they must refuse.
bool refuses_family(const std::string& family) {
  static const std::set<std::string> families = {"activation backward", "cross_entropy backward",
                                                 "row backward"};
  return families.count(family) > 0;
}
bool refuses(const OpDescriptor& d) { return refuses_family(d.family); }

void check_gradients(const std::string& family) {
  int n = 0, run = 0;
  std::uint64_t seed = std::hash<std::string>{}(family) % 1000 + 7;
  for (const OpDescriptor& d : op_catalog()) {
    if (d.family != family) continue;
    ++n;
    for (DType dt : d.dtypes) {
      for (OpLayout l : d.layouts) {
        // Finite differences once per descriptor: f64, contiguous, small.
        const bool fd = grad_case_takes_finite_differences(d, dt, l);
        const GradCaseReport rep = run_grad_case(d, dt, l, ++seed, fd);
        INFO(rep.summary());
        if (rep.skipped()) {
          // Nothing to differentiate (argmax, integer casts, fill_), or no backward yet.
          const bool nothing = rep.skip_reason.find("no floating") != std::string::npos;
          const bool refused = rep.skip_reason.find("no backward yet") != std::string::npos;
          CHECK((nothing || (refused && refuses(d))));
          continue;
        }
        CHECK_FALSE(refuses(d));
        ++run;
        CHECK(rep.pass());
      }
    }
  }
  CHECK(n > 0);
  if (family != "fill" && family != "compare" && !refuses_family(family)) CHECK(run > 0);
}

}  // namespace

TEST_CASE("gradients: binary ops, same shape and broadcasting", "[autograd][runner]") {
  check_gradients("binary");
}
TEST_CASE("gradients: scalar forms", "[autograd][runner]") { check_gradients("scalar"); }
TEST_CASE("gradients: unary ops", "[autograd][runner]") { check_gradients("unary"); }
TEST_CASE("gradients: where", "[autograd][runner]") { check_gradients("where"); }
TEST_CASE("gradients: comparisons have none (bool out)", "[autograd][runner]") {
  check_gradients("compare");
}
TEST_CASE("gradients: cast and copy_", "[autograd][runner]") { check_gradients("cast"); }
TEST_CASE("gradients: sum, mean, max", "[autograd][runner]") { check_gradients("reduce"); }
TEST_CASE("gradients: softmax, log_softmax", "[autograd][runner]") { check_gradients("softmax"); }
TEST_CASE("gradients: layer_norm, rms_norm", "[autograd][runner]") { check_gradients("norm"); }
TEST_CASE("gradients: matmul, linear", "[autograd][runner]") { check_gradients("matmul"); }
TEST_CASE("gradients: concat", "[autograd][runner]") { check_gradients("concat"); }
TEST_CASE("gradients: rotary, both conventions", "[autograd][runner]") {
  check_gradients("rotary");
}
TEST_CASE("gradients: embedding (a deterministic scatter-add)", "[autograd][runner]") {
  check_gradients("embedding");
}
TEST_CASE("gradients: long rows (several warps or blocks per row on cuda)", "[autograd][runner]") {
  check_gradients("long rows");
}
TEST_CASE("gradients: cross_entropy (its backward kernel)", "[autograd][runner]") {
  check_gradients("cross_entropy");
}
TEST_CASE("gradients: tril and triu", "[autograd][runner]") { check_gradients("tri"); }
TEST_CASE("gradients: dropout (the mask regenerated from the seed)", "[autograd][runner]") {
  check_gradients("dropout");
}
TEST_CASE("gradients: topk (scattered to the chosen positions)", "[autograd][runner]") {
  check_gradients("topk");
}
TEST_CASE("gradients: index_copy_ (KV-cache appends into views)", "[autograd][runner]") {
  check_gradients("index_copy");
}
TEST_CASE("gradients: the backward kernels refuse a second derivative", "[autograd][runner]") {
  check_gradients("activation backward");
  check_gradients("cross_entropy backward");
  check_gradients("row backward");
}
