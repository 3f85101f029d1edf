#pragma once
// The cases `strata check` runs through the harness, grouped for the summary.
#include <string>
#include <vector>

#include "strata/harness.hpp"

namespace strata::cli {

struct SweepCase {
  std::string group;  // "shapes", "layouts", "masks", ... (a row of the summary)
  harness::AttentionCase c;
};

// The quick sweep (every axis listed in docs/guide/cli-attention.md touched once or twice,
// seconds on two cores) or, with full = true, more shapes, each crossed with
// every layout and with every option, the option on a rotating layout (minutes).
std::vector<SweepCase> check_sweep(bool full);

}  // namespace strata::cli
