#pragma once
// The team size of the cpu backend's parallel regions that have fewer work
// items than threads (a skinny matrix product's slices, a decode step's
// attention tasks). By default every such region asks for the full team
// (omp_get_max_threads()), surplus threads getting no item: regions that
// alternate between team sizes make libgomp rebuild its teams, which cost a
// decode step several times its work on a many-core machine (docs/log/cpu.md,
// "Threads: full teams against sized teams"). STRATA_CPU_FIXED_TEAM=0 (strata/tuning.hpp) sizes
// each team by its items instead, for comparison.
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "strata/tuning.hpp"

namespace strata::cpu {

inline int region_team(std::int64_t items) {
  static const bool fixed = tuning().cpu_fixed_team;
  const int max = std::max(1, omp_get_max_threads());
  return fixed ? max : static_cast<int>(std::clamp<std::int64_t>(items, 1, max));
}

}  // namespace strata::cpu
