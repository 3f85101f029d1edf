#pragma once
// What the attention and op checks of `strata check` share: the backends
// they run on, a tally per group and backend, and the summary table.
#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "strata/registry.hpp"
#include "table.hpp"

namespace strata::cli {

// The backends compiled into this build and available on this machine.
inline std::vector<std::string> available_backends() {
  std::vector<std::string> backends;
  for (const BackendInfo& b : Registry::get().backends())
    if (b.compiled && b.available) backends.push_back(b.name);
  return backends;
}

struct Tally {
  int run = 0, passed = 0, not_checked = 0;
  double worst_ratio = 0;  // max over cases of the check's error over its bound

  // One case run: passed or not, and its ratio where it has one (counts).
  void add_run(bool pass, bool ratio_counts, double ratio) {
    ++run;
    passed += pass ? 1 : 0;
    if (ratio_counts) worst_ratio = std::max(worst_ratio, ratio);
  }
};
using Tallies = std::map<std::string, std::map<std::string, Tally>>;  // group -> backend -> tally

// Prints, after a blank line, a table with a row per group: "passed/run"
// (and "(+n not checked)") per backend, then each backend's worst ratio, in
// a column named "<backend> <ratio_name>".
inline void print_tally_table(std::ostream& os, const std::vector<std::string>& groups,
                              const std::vector<std::string>& backends, Tallies& tally,
                              const std::string& ratio_name) {
  std::vector<std::string> header{"group"};
  for (const std::string& b : backends) header.push_back(b + " passed");
  for (const std::string& b : backends) header.push_back(b + " " + ratio_name);
  Table table(header);
  for (const std::string& g : groups) {
    std::vector<std::string> row{g};
    for (const std::string& b : backends) {
      const Tally& t = tally[g][b];
      std::string cell = std::to_string(t.passed) + "/" + std::to_string(t.run);
      if (t.not_checked) cell += " (+" + std::to_string(t.not_checked) + " not checked)";
      row.push_back(cell);
    }
    for (const std::string& b : backends) row.push_back(fmt("%.3f", tally[g][b].worst_ratio));
    table.add(row);
  }
  os << '\n';
  table.print(os);
}

// The exit of a check: kExitOk after pass_line when nothing failed, else
// kExitMismatch after "<n> <failing>" and the first 20 failures.
inline int report_failures(std::ostream& os, const std::vector<std::string>& failures,
                           const std::string& pass_line, const char* failing) {
  if (failures.empty()) {
    os << pass_line;
    return kExitOk;
  }
  os << "\n" << failures.size() << " " << failing;
  const std::size_t shown = std::min<std::size_t>(failures.size(), 20);
  if (shown < failures.size()) os << " (first " << shown << ")";
  os << ":\n";
  for (std::size_t i = 0; i < shown; ++i) os << failures[i] << "\n";
  return kExitMismatch;
}

}  // namespace strata::cli
