#pragma once
// The team size of the cpu backend's parallel regions that have fewer work
// items than threads (a skinny matrix product's slices, a decode step's
// attention tasks). By default every such region asks for the full team
// (omp_get_max_threads()), surplus threads getting no item: on the GPU
// machine's 16-core Xeon, a decode step whose regions alternated between
// teams of 16, 8 and fewer ran 5-8 ms against 0.93 ms with every region at
// 8 threads (docs/cpu.md, "Threads"). STRATA_CPU_FIXED_TEAM=0 sizes each
// team by its items instead (the earlier behaviour, for comparison).
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
