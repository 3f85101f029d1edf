#pragma once
// sum_of_squares (strata/optim_ops.hpp) on one backend against a plain sum
// on the host: the cpu suite (test_sum_of_squares.cpp) and the cuda one
// (cuda/test_cuda_optim.cpp) share it.
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/optim_ops.hpp"

namespace squares_test {

using namespace strata;

// Seeded tensors of `shapes` in dtype dt on dev; every odd-numbered one a
// view `offset` elements into a larger buffer when offset > 0. integral:
// values in {-3, ..., 3}, whose squares add up exactly in f64 in any order.
inline std::vector<Tensor> make(const std::vector<Shape>& shapes, DType dt, Device dev,
                                bool integral, std::int64_t offset = 0) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> v = Tensor::randn(shapes[i], 500 + i, DType::f64).to_vector<double>();
    for (double& x : v) x = integral ? static_cast<double>(static_cast<int>(x * 1.5) % 4) : x;
    Tensor t = Tensor::from_vector(v, shapes[i]).to(dt).to(dev);
    if (offset > 0 && i % 2 == 1) {
      Tensor buf = Tensor::zeros({t.numel() + offset}, dt, dev);
      Tensor view = buf.narrow(0, offset, t.numel()).reshape(shapes[i]);
      view.copy_from(t);
      t = view;
    }
    out.push_back(t);
  }
  return out;
}

// The squares of the values the tensors hold, added on the host in f64.
inline double host_sum(const std::vector<Tensor>& ts) {
  double s = 0.0;
  for (const Tensor& t : ts)
    for (double x : t.to(Device::cpu()).to_vector<double>()) s += x * x;
  return s;
}

// sum_of_squares on `be` is a 0-d f64 on dev equal to the host's sum:
// exactly for integral values, to f64 rounding otherwise; and the same bits
// on a second call.
inline void check_against_host(const std::vector<Shape>& shapes, DType dt, const char* be,
                               Device dev, bool integral, std::int64_t offset = 0) {
  const std::vector<Tensor> ts = make(shapes, dt, dev, integral, offset);
  const Tensor got = sum_of_squares(ts, ops_test::on(be));
  REQUIRE(got.dtype() == DType::f64);
  REQUIRE(got.dim() == 0);
  REQUIRE(got.device() == dev);
  const double g = got.to(Device::cpu()).item<double>();
  const double want = host_sum(ts);
  INFO(dtype_name(dt) << (integral ? " integral" : " random") << " offset " << offset << ": " << g
                      << " vs host " << want);
  if (integral)
    CHECK(g == want);
  else
    CHECK(std::abs(g - want) <= 1e-12 * want);
  CHECK(sum_of_squares(ts, ops_test::on(be)).to(Device::cpu()).item<double>() == g);
}

}  // namespace squares_test
