#pragma once
// Error of one result against a float64 truth, computed on the host in double.
#include <cmath>
#include <cstdint>
#include <vector>

#include "strata/tensor.hpp"

namespace strata::cli {

struct ErrorStats {
  double max_abs = 0.0;
  double rel_fro = 0.0;             // ||got - want||_F / ||want||_F (absolute if want is 0)
  std::int64_t nonfinite_diff = 0;  // elements where exactly one side is NaN/inf, or they differ
};

inline ErrorStats compare(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = got.to_vector<double>();
  const std::vector<double> w = want.to_vector<double>();
  ErrorStats s;
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < g.size() && i < w.size(); ++i) {
    if (!std::isfinite(g[i]) || !std::isfinite(w[i])) {
      // Equal infinities (an empty row's lse) agree; NaN never does.
      if (!(g[i] == w[i])) ++s.nonfinite_diff;
      continue;
    }
    const double e = g[i] - w[i];
    s.max_abs = std::max(s.max_abs, std::abs(e));
    num += e * e;
    den += w[i] * w[i];
  }
  if (g.size() != w.size()) ++s.nonfinite_diff;
  s.rel_fro = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
  return s;
}

}  // namespace strata::cli
