#pragma once
// What the cuda tests share: the GPU, options naming a backend, and the
// comparison of a GPU result with the reference backend's (the first
// element out of tolerance is reported, one assertion per compare; a NaN
// wanted must be a NaN, an infinity the same infinity).
#include <cstddef>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace cuda_test {

inline const strata::Device kGpu = strata::Device::cuda(0);

using ops_test::on;
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
  const std::size_t bad = ops_test::first_out_of_tolerance(g, w, atol, rtol);
  INFO("first bad element " << bad << " of " << g.size() << ": got "
                            << (bad < g.size() ? g[bad] : 0.0) << " want "
                            << (bad < g.size() ? w[bad] : 0.0));
  REQUIRE(bad == g.size());
}

}  // namespace cuda_test
