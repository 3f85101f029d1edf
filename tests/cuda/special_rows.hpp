#pragma once
// Eight rows of n values (f64; n a multiple of 8, >= 2048) that corner the
// row kernels, shared by the rows16 and variant suites: row 0 all -inf; 1
// one NaN; 2 one -inf; 3 the elements of every 8-wide vector v with
// v % period == 5 -inf (for a kernel that gives thread t the vectors t,
// t + period, ...: a thread whose elements are all -inf); 4 those elements
// NaN; 5 one +inf at column inf_col; 6 constant (variance 0); 7 ordinary.
// for_16bit_rows runs a check on such rows in both 16-bit dtypes.
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

namespace strata_test {

inline strata::Tensor special_rows(std::int64_t n, std::int64_t period, std::int64_t inf_col) {
  std::vector<double> v(static_cast<std::size_t>(8 * n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(double(i) * 0.37) * 3.0;
  for (std::int64_t j = 0; j < n; ++j) {
    v[j] = -INFINITY;
    if (j / 8 % period == 5) v[3 * n + j] = -INFINITY;
    if (j / 8 % period == 5) v[4 * n + j] = NAN;
    v[6 * n + j] = 1.5;
  }
  v[1 * n + 1234] = NAN;
  v[2 * n + 77] = -INFINITY;
  v[5 * n + inf_col] = INFINITY;
  return strata::Tensor::from_vector<double>(v, {8, n});
}

// Runs check(dt, h, d, b) for dt bf16 then f16: h the rows x (rank 2) in
// dt, d a copy of h on the GPU, b a bias of 0.5 for a row, in dt on the host.
template <class Check>
void for_16bit_rows(const strata::Tensor& x, const Check& check) {
  for (strata::DType dt : {strata::DType::bf16, strata::DType::f16}) {
    INFO("dtype " << strata::dtype_name(dt));
    const strata::Tensor h = x.to(dt), d = h.to(strata::Device::cuda(0));
    const strata::Tensor b = strata::Tensor::full({x.shape()[1]}, 0.5, dt);
    check(dt, h, d, b);
  }
}

// The row ops of rows xh (on the host, in dt) with weight w and bias b on
// the GPU against the reference: layer_norm with and without weight and
// bias, rms_norm with weight (and without, with rms_unweighted), softmax,
// log_softmax; within two of cuda_test::tol(dt) relative, one absolute.
inline void require_row_ops_close(const strata::Tensor& xh, const strata::Tensor& w,
                                  const strata::Tensor& b, strata::DType dt, bool rms_unweighted) {
  using cuda_test::kCuda;
  using cuda_test::kGpu;
  using cuda_test::kRef;
  using cuda_test::require_close;
  using strata::Tensor;
  const Tensor xd = xh.to(kGpu), wd = w.to(kGpu), bd = b.to(kGpu);
  const double t = cuda_test::tol(dt) * 2, atol = cuda_test::tol(dt);
  require_close(layer_norm(xd, wd, bd, 1e-5, kCuda), layer_norm(xh, w, b, 1e-5, kRef), atol, t);
  require_close(layer_norm(xd, Tensor(), Tensor(), 1e-5, kCuda),
                layer_norm(xh, Tensor(), Tensor(), 1e-5, kRef), atol, t);
  require_close(rms_norm(xd, wd, 1e-6, kCuda), rms_norm(xh, w, 1e-6, kRef), atol, t);
  if (rms_unweighted)
    require_close(rms_norm(xd, Tensor(), 1e-6, kCuda), rms_norm(xh, Tensor(), 1e-6, kRef), atol, t);
  require_close(softmax(xd, 1, kCuda), softmax(xh, 1, kRef), 1e-7, t);
  require_close(log_softmax(xd, 1, kCuda), log_softmax(xh, 1, kRef), t, t);
}

}  // namespace strata_test
