// `strata check`: the op runner part. Every descriptor of op_catalog(), on
// every dtype and layout it lists, on every available backend, against the
// reference backend in float64; a table per family and backend, and the
// failing cases with their worst element.
#include "check_ops.hpp"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include "check_sweep.hpp"
#include "check_tally.hpp"
#include "commands.hpp"
#include "strata/op_harness.hpp"
#include "strata/registry.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

std::string group_of(const harness::OpDescriptor& d) { return "ops:" + d.family; }

}  // namespace

int run_op_checks(const std::string& only) {
  std::vector<const harness::OpDescriptor*> ds;
  for (const harness::OpDescriptor& d : harness::op_catalog())
    if (group_of(d).find(only) != std::string::npos) ds.push_back(&d);
  const std::vector<std::string> backends = available_backends();
  std::cout << "\nstrata check: " << ds.size() << " op descriptors (each over its dtypes and "
            << harness::all_op_layouts().size() << " layouts) on " << backends.size()
            << " backends, against the reference in float64\n";

  std::vector<std::string> groups;
  Tallies tally;
  std::set<std::string> not_landed;
  std::map<std::string, std::set<std::string>> partial;  // backend -> ops it has no kernel for
  std::vector<std::string> failures;
  int cases = 0;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    const harness::OpDescriptor& d = *ds[i];
    const std::string g = group_of(d);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    progress("[" + std::to_string(i + 1) + "/" + std::to_string(ds.size()) + "] " + d.name);
    for (const harness::OpCaseReport& rep : harness::run_op(d, 7000 + i)) {
      if (!rep.checked()) {
        not_landed.insert(rep.not_landed.begin(), rep.not_landed.end());
        continue;
      }
      ++cases;
      for (const harness::OpBackendResult& r : rep.results) {
        Tally& t = tally[g][r.backend];
        if (!r.checked) {
          ++t.not_checked;
          partial[r.backend].insert(d.name);
          continue;
        }
        t.add_run(r.pass, r.error.empty() && std::isfinite(r.worst_ratio), r.worst_ratio);
      }
      if (!rep.all_pass()) failures.push_back(rep.summary());
    }
  }
  progress("");

  print_tally_table(std::cout, groups, backends, tally, "worst err/bound");
  std::cout << "\nerr/bound: the worst element's error over its bound (a few ulp of the dtype "
               "relative, plus a floor that grows with a row op's row or a matmul's K); pass "
               "needs every element within it, no NaN/inf mismatch, every output element "
               "written and the guard around the output view intact\n";
  if (!not_landed.empty()) {
    std::cout << "NOT CHECKED, no kernel registered yet:";
    for (const std::string& s : not_landed) std::cout << ' ' << s;
    std::cout << '\n';
  }
  for (const auto& [b, names] : partial) {
    std::cout << "NOT CHECKED on " << b << ", no kernel there yet:";
    for (const std::string& s : names) std::cout << " '" << s << "'";
    std::cout << '\n';
  }
  return report_failures(std::cout, failures,
                         "all " + std::to_string(cases) + " op cases pass on every backend\n",
                         "FAILING OP CASES");
}

int run_check_with_ops(bool full, const std::string& only, const std::function<int()>& attention) {
  bool attention_matches = only.empty();
  for (const SweepCase& c : check_sweep(full))
    attention_matches = attention_matches || c.group.find(only) != std::string::npos;
  bool ops_match = false;
  for (const harness::OpDescriptor& d : harness::op_catalog())
    ops_match = ops_match || group_of(d).find(only) != std::string::npos;
  const bool grads_match = grad_groups_match(only);
  if (!attention_matches && !ops_match && !grads_match)
    throw UsageError("check: no group matches --group '" + only + "'");
  int status = kExitOk;
  if (attention_matches) status = attention();
  if (ops_match) status = std::max(status, run_op_checks(only));
  if (grads_match) status = std::max(status, run_grad_checks(only));
  return status;
}

}  // namespace strata::cli
