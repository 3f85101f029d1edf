// `strata check [--full]`: the cross-backend sweep through the harness
// (strata/harness.hpp), then the op runner and the gradient runner
// (check_ops.cpp, check_grads.cpp), each with a progress line and a summary
// per group.
#include <algorithm>
#include <iostream>
#include <map>

#include "check_ops.hpp"
#include "check_sweep.hpp"
#include "check_tally.hpp"
#include "commands.hpp"
#include "strata/registry.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

double ratio(const harness::BackendResult& r) {
  return r.tol_rel_fro > 0 ? r.rel_fro_err / r.tol_rel_fro : r.rel_fro_err;
}

int run_check(bool full, const std::string& only) {
  std::vector<SweepCase> cases = check_sweep(full);
  if (!only.empty()) {
    std::erase_if(cases,
                  [&](const SweepCase& c) { return c.group.find(only) == std::string::npos; });
    if (cases.empty()) throw UsageError("check: no group matches --group '" + only + "'");
  }
  const std::vector<std::string> backends = available_backends();

  std::cout << "strata check: " << cases.size() << (full ? " cases (full sweep)" : " cases")
            << " on " << backends.size() << " backends, against the reference in float64\n";
  std::vector<std::string> groups;
  Tallies tally;
  std::vector<std::string> failures;
  const std::size_t step = std::max<std::size_t>(1, cases.size() / 10);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const SweepCase& sc = cases[i];
    if (std::find(groups.begin(), groups.end(), sc.group) == groups.end())
      groups.push_back(sc.group);
    const std::string where =
        "[" + std::to_string(i + 1) + "/" + std::to_string(cases.size()) + "] " + sc.group;
    progress(where + ": " + sc.c.describe());
    if (!is_tty_stderr() && (i % step == 0 || i + 1 == cases.size()))
      std::cerr << where << std::endl;
    harness::CaseReport rep;
    try {
      rep = harness::run_attention_case(sc.c);
    } catch (const Error& e) {
      failures.push_back(sc.c.describe() + "\n  harness: " + e.what());
      continue;
    }
    for (const harness::BackendResult& r : rep.results) {
      tally[sc.group][r.backend].add_run(r.pass, r.error.empty(), ratio(r));
    }
    if (!rep.all_pass()) failures.push_back(rep.summary());
  }
  progress("");

  print_tally_table(std::cout, groups, backends, tally, "worst err/tol");
  std::cout << "\nerr/tol: relative Frobenius error over the case's own bound (the harness derives "
               "it from a naive computation in the case's dtype); pass needs <= 1, no NaN/inf "
               "mismatch, every output written and every guard intact\n";
  return report_failures(std::cout, failures,
                         "all " + std::to_string(cases.size()) + " cases pass on every backend\n",
                         "FAILING CASES");
}

}  // namespace

void add_check_command(CLI::App& root, int& status) {
  CLI::App* cmd = root.add_subcommand(
      "check",
      "Run the cross-backend sweep: every case on every available backend against the "
      "float64 reference");
  static bool full = false;
  static std::string only;
  cmd->add_flag(
      "--full", full,
      "More shapes, each crossed with every layout and option (682 cases, ~10 s on 2 cores)");
  cmd->add_option("--group", only,
                  "Only the groups whose name contains this: attention's (shapes, layouts, "
                  "causal, window, masks, gqa, scale, batch, edge) and the op runner's "
                  "ops:<family> (ops:binary, ops:unary, ops:reduce, ops:softmax, ops:norm, "
                  "ops:matmul, ...; 'ops:' alone runs every op family and no attention case), "
                  "and the gradient runner's grad:<family> (grad:matmul, ...; 'grad:' alone "
                  "runs every family's gradients only)");
  cmd->callback(
      [&status] { status = run_check_with_ops(full, only, [] { return run_check(full, only); }); });
}

}  // namespace strata::cli
