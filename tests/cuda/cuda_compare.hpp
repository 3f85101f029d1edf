#pragma once
// What the cuda tests share: the GPU, options naming a backend, and the
// comparison of a GPU result with the reference backend's (the first
// element out of tolerance is reported, one assertion per compare; a NaN
// wanted must be a NaN, an infinity the same infinity).
#include <cmath>
#include <cstddef>
#include <vector>

#include "catch.hpp"
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace cuda_test {

inline const strata::Device kGpu = strata::Device::cuda(0);

inline strata::OpOptions on(const char* backend) {
  strata::OpOptions o;
  o.backend = backend;
  return o;
}
inline const strata::OpOptions kRef = on("reference");
inline const strata::OpOptions kCuda = on("cuda");

// Two ulps of a 16-bit dtype, or the error of f32 maths.
inline double tol(strata::DType dt) {
  return dt == strata::DType::bf16 ? 1.6e-2 : dt == strata::DType::f16 ? 2e-3 : 3e-5;
}

inline void require_close(const strata::Tensor& got, const strata::Tensor& want, double atol,
                          double rtol) {
  REQUIRE(got.shape() == want.shape());
  const std::vector<double> g = got.to(strata::Device::cpu()).to_vector<double>();
  const std::vector<double> w = want.to(strata::Device::cpu()).to_vector<double>();
  std::size_t bad = g.size();
  for (std::size_t i = 0; i < g.size() && bad == g.size(); ++i) {
    bool ok;
    if (std::isnan(w[i]))
      ok = std::isnan(g[i]);
    else if (std::isinf(w[i]))
      ok = g[i] == w[i];
    else
      ok = std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!ok) bad = i;
  }
  INFO("first bad element " << bad << " of " << g.size() << ": got "
                            << (bad < g.size() ? g[bad] : 0.0) << " want "
                            << (bad < g.size() ? w[bad] : 0.0));
  REQUIRE(bad == g.size());
}

}  // namespace cuda_test
