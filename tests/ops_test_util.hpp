#pragma once
// Helpers shared by the op tests (cpu and cuda): options naming a backend,
// and a per-dtype value (a tolerance) picked from a small table.
#include <cmath>
#include <cstddef>
#include <vector>

#include "strata/dtype.hpp"
#include "strata/op_options.hpp"

namespace ops_test {

// Options that run an op on `backend` ("reference", "cpu", "cuda").
inline strata::OpOptions on(const char* backend) {
  strata::OpOptions o;
  o.backend = backend;
  return o;
}

// The value for dt: f64, f32, f16 or bf16's, or `other` for any other dtype.
inline double per_dtype(strata::DType dt, double f64, double f32, double f16, double bf16,
                        double other) {
  switch (dt) {
    case strata::DType::f64:
      return f64;
    case strata::DType::f32:
      return f32;
    case strata::DType::f16:
      return f16;
    case strata::DType::bf16:
      return bf16;
    default:
      return other;
  }
}

// The first i with g[i] not within atol + rtol |w[i]| of w[i] (a NaN wanted
// must be a NaN, an infinity the same infinity), or g.size() if none is;
// w holds at least g.size() values.
inline std::size_t first_out_of_tolerance(const std::vector<double>& g,
                                          const std::vector<double>& w, double atol, double rtol) {
  for (std::size_t i = 0; i < g.size(); ++i) {
    bool ok;
    if (std::isnan(w[i]))
      ok = std::isnan(g[i]);
    else if (std::isinf(w[i]))
      ok = g[i] == w[i];
    else
      ok = std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!ok) return i;
  }
  return g.size();
}

}  // namespace ops_test
