// Error statistics of one result against a reference, shared by the harness
// and the CLI's main job.
#include <algorithm>
#include <cmath>

#include "strata/harness.hpp"

namespace strata::harness {

ErrorStats compare_values(const std::vector<double>& got, const std::vector<double>& ref) {
  STRATA_CHECK(got.size() == ref.size(), "compare_values", "got has ", got.size(),
               " elements but ref has ", ref.size());
  ErrorStats d;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i], r = ref[i];
    if (std::isnan(g) || std::isnan(r)) {
      if (std::isnan(g) != std::isnan(r)) ++d.nan_mismatch;
      continue;
    }
    if (std::isinf(g) || std::isinf(r)) {
      if (g != r) ++d.inf_mismatch;
      continue;
    }
    d.max_abs = std::max(d.max_abs, std::abs(g - r));
    num += (g - r) * (g - r);
    den += r * r;
  }
  d.rel_fro = num == 0 ? 0.0 : std::sqrt(num) / std::max(std::sqrt(den), 1e-300);
  return d;
}

ErrorStats compare_values(const Tensor& got, const Tensor& ref) {
  return compare_values(got.to_vector<double>(), ref.to_vector<double>());
}

}  // namespace strata::harness
