// `strata check`: the gradient part. Every descriptor of op_catalog() under
// an autograd tape (harness::run_grad_case): each floating input's gradient,
// on every available backend in every dtype and layout of the descriptor,
// against the reference backend's in float64, and the reference's own
// against central finite differences once per descriptor (f64, contiguous,
// small inputs), as tests/test_autograd_runner.cpp runs them.
#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "check_ops.hpp"
#include "check_tally.hpp"
#include "commands.hpp"
#include "strata/op_harness.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

struct GradTally {
  int run = 0, passed = 0, finite_differences = 0, not_differentiable = 0, no_backward = 0;
};

std::string grad_group_of(const harness::OpDescriptor& d) { return "grad:" + d.family; }

}  // namespace

bool grad_groups_match(const std::string& only) {
  for (const harness::OpDescriptor& d : harness::op_catalog())
    if (grad_group_of(d).find(only) != std::string::npos) return true;
  return false;
}

int run_grad_checks(const std::string& only) {
  std::vector<const harness::OpDescriptor*> ds;
  for (const harness::OpDescriptor& d : harness::op_catalog())
    if (grad_group_of(d).find(only) != std::string::npos) ds.push_back(&d);
  const std::vector<std::string> backends = available_backends();
  std::cout << "\nstrata check: the gradients of " << ds.size()
            << " op descriptors (each over its dtypes and layouts) on " << backends.size()
            << " backends, against the reference's in float64\n";

  std::vector<std::string> groups;
  std::map<std::string, GradTally> tally;
  std::set<std::string> no_backward;
  std::vector<std::string> failures;
  int cases = 0;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    const harness::OpDescriptor& d = *ds[i];
    const std::string g = grad_group_of(d);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    progress("[" + std::to_string(i + 1) + "/" + std::to_string(ds.size()) + "] gradient of " +
             d.name);
    GradTally& t = tally[g];
    std::uint64_t seed = 9000 + 100 * i;
    for (DType dt : d.dtypes) {
      for (harness::OpLayout l : d.layouts) {
        const bool fd = harness::grad_case_takes_finite_differences(d, dt, l);
        const harness::GradCaseReport rep = harness::run_grad_case(d, dt, l, ++seed, fd);
        if (rep.skipped()) {
          // Nothing to differentiate (argmax, integer dtypes), or no backward:
          // the backward kernels themselves have no second derivative.
          if (rep.skip_reason.find("no floating") != std::string::npos) {
            ++t.not_differentiable;
          } else {
            ++t.no_backward;
            no_backward.insert(d.name);
          }
          continue;
        }
        ++cases;
        ++t.run;
        t.passed += rep.pass() ? 1 : 0;
        t.finite_differences += fd ? 1 : 0;
        if (!rep.pass()) failures.push_back(rep.summary());
      }
    }
  }
  progress("");

  Table table({"group", "cases passed", "of them vs finite differences", "not differentiable",
               "no backward"});
  for (const std::string& g : groups) {
    const GradTally& t = tally[g];
    table.add({g, std::to_string(t.passed) + "/" + std::to_string(t.run),
               std::to_string(t.finite_differences), std::to_string(t.not_differentiable),
               std::to_string(t.no_backward)});
  }
  std::cout << '\n';
  table.print(std::cout);
  std::cout << "\na case passes when every floating input's gradient on every backend is within "
               "8 times the forward's bound of the reference's (the upstream gradient seeded), and "
               "the reference's within 1e-5 of central differences where those are taken; not "
               "differentiable: no floating input or output\n";
  if (!no_backward.empty()) {
    std::cout << "NO BACKWARD (refused under a tape):";
    for (const std::string& s : no_backward) std::cout << " '" << s << "'";
    std::cout << '\n';
  }
  return report_failures(std::cout, failures,
                         "all " + std::to_string(cases) + " gradient cases pass on every backend\n",
                         "FAILING GRADIENT CASES");
}

}  // namespace strata::cli
