#pragma once
// Shared by tests/test_ops_matmul.cpp (cpu vs reference) and
// tests/cuda/test_cuda_matmul.cpp (cuda vs reference): operands in a chosen
// memory layout on any device, filled with the same values everywhere, and
// the comparison with its per-dtype tolerance.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace matmul_test {

using strata::Device;
using strata::DType;
using strata::Shape;
using strata::Tensor;

enum class Layout {
  contiguous,   // row-major
  transposed,   // column-major: a transpose view (unit row stride)
  sliced,       // a window of a larger buffer: offset, row stride > cols
  neg_rows,     // rows flipped: negative row stride
  neg_cols,     // columns flipped: negative column stride
  inner_step,   // every other column: column stride 2 (no unit stride)
  bcast_batch,  // one matrix expanded over the batch dims (stride 0)
};

// Layout's values in order.
inline constexpr const char* kLayoutNames[] = {"contiguous", "transposed", "sliced",     "neg_rows",
                                               "neg_cols",   "inner_step", "bcast_batch"};
inline const char* name(Layout l) { return kLayoutNames[static_cast<int>(l)]; }

inline const Layout kAllLayouts[] = {Layout::contiguous, Layout::transposed, Layout::sliced,
                                     Layout::neg_rows,   Layout::neg_cols,   Layout::inner_step,
                                     Layout::bcast_batch};
static_assert(std::size(kLayoutNames) == std::size(kAllLayouts));

// A view of `shape` (rank >= 2) with layout `l` on `dev`, its buffer full of
// NaN first (so a read outside the view shows), then the values `values`
// (a host tensor of `shape`) copied in.
inline Tensor make_view(const Tensor& values, Layout l, Device dev) {
  const Shape& s = values.shape();
  const int r = static_cast<int>(s.size());
  const DType dt = values.dtype();
  const std::int64_t R = s[r - 2], C = s[r - 1];
  Shape big = s;
  Tensor v;
  switch (l) {
    case Layout::contiguous:
      v = Tensor::full(s, NAN, dt, dev);
      break;
    case Layout::transposed:
      std::swap(big[r - 2], big[r - 1]);
      v = Tensor::full(big, NAN, dt, dev).transpose(r - 2, r - 1);
      break;
    case Layout::sliced:
      big[r - 2] = R + 2;
      big[r - 1] = C + 3;
      v = Tensor::full(big, NAN, dt, dev).slice(r - 2, 1, R + 1).slice(r - 1, 2, C + 2);
      break;
    case Layout::neg_rows:
      v = Tensor::full(s, NAN, dt, dev).flip(r - 2);
      break;
    case Layout::neg_cols:
      v = Tensor::full(s, NAN, dt, dev).flip(r - 1);
      break;
    case Layout::inner_step:
      big[r - 1] = 2 * C;
      v = Tensor::full(big, NAN, dt, dev).slice(r - 1, 0, 2 * C, 2);
      break;
    case Layout::bcast_batch: {
      // Every batch entry is the first matrix: the values are made to match.
      Tensor one = Tensor::full({R, C}, NAN, dt, dev);
      one.copy_from(values.reshape_copy({-1, R, C}).select(0, 0));
      return one.expand(s);
    }
  }
  v.copy_from(values);
  return v;
}

// Rounding units: of the accumulation (f32 for f32, f16 and bf16, whose
// inputs are exact in f32; f64 for f64), and of the products' inputs (0
// when the inputs enter the products exactly; 2^-11 for TF32, precision
// medium, which keeps 10 mantissa bits of each f32 input).
inline double acc_unit(DType dt) {
  return dt == DType::f64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}
inline double input_unit(DType dt, strata::Precision p) {
  return dt == DType::f32 && p == strata::Precision::medium ? std::ldexp(1.0, -11) : 0.0;
}
// One ulp (relative) of the output type: the result and the reference are
// each rounded once to it, so they may differ by one ulp of the value.
inline double out_ulp(DType dt) {
  switch (dt) {
    case DType::f64:
      return std::ldexp(1.0, -52);
    case DType::f16:
      return std::ldexp(1.0, -10);
    case DType::bf16:
      return std::ldexp(1.0, -7);
    default:
      return std::ldexp(1.0, -23);
  }
}

// got vs want (the f64 reference rounded to the dtype), elementwise:
//   |got - want| <= ulp |want| + 16 (u_in sqrt(K) + u_acc K)
// Inputs are standard normal, so each product is ~1 in size and a K-term
// sum is ~sqrt(K). Rounding the inputs (TF32) puts an independent relative
// error u_in on each product: a random walk of K unit terms, u_in sqrt(K).
// Accumulating rounds each partial sum (size ~sqrt(K)) by u_acc, K times
// at random: u_acc sqrt(K) sqrt(K) = u_acc K. Both are the result's size
// sqrt(K) times a relative error growing like sqrt(K). The factor 16 covers
// the blocked orders of BLAS and the tail over thousands of elements (the
// worst seen on the H200 with cuBLAS: 2.7 u_acc K for f32 at K = 200, 1.8
// u_acc K for f64 at K = 512, one element each, both over an earlier
// u_acc sqrt(K) model).
// A product computed in TF32 where f32 was asked for is ~2^-11 sqrt(K),
// hundreds of times this bound for f32.
inline void require_close(const Tensor& got, const Tensor& want, std::int64_t K,
                          strata::Precision p = strata::Precision::highest) {
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  const double ulp = out_ulp(want.dtype());
  const double k = double(K > 0 ? K : 1);
  const double floor =
      16.0 * (input_unit(want.dtype(), p) * std::sqrt(k) + acc_unit(want.dtype()) * k);
  std::size_t bad = 0, first = 0;
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double err = std::abs(g[i] - w[i]);
    const double tol = ulp * std::abs(w[i]) + floor;
    if (!(err <= tol)) {  // NaN fails
      if (bad++ == 0) first = i;
    }
    if (err > worst || std::isnan(err)) worst = err;
  }
  INFO("mismatches " << bad << " of " << g.size() << "; first at flat index " << first << ": got "
                     << (g.empty() ? 0 : g[first]) << ", want " << (w.empty() ? 0 : w[first])
                     << "; worst abs error " << worst << ", floor " << floor);
  CHECK(bad == 0);  // not REQUIRE: the other cases of the test still run
}

// out[m, n] = sum_k a[m, k] b[k, n] (+ bias[n] when bias) (+ out0[m, n]
// when acc), in f64, written out as loops (not another matmul): a
// row-major [M, K], b read at b[k * bk + n * bn]; the independent check of
// the matrix-vector kernels (tests/cuda/test_cuda_gemv*.cpp).
inline std::vector<double> affine_f64(const std::vector<double>& a, const std::vector<double>& b,
                                      std::int64_t bk, std::int64_t bn,
                                      const std::vector<double>& bias, bool use_bias,
                                      const std::vector<double>& out0, bool acc, std::int64_t M,
                                      std::int64_t N, std::int64_t K) {
  const auto at = [](const std::vector<double>& v, std::int64_t i) {
    return v[static_cast<std::size_t>(i)];
  };
  std::vector<double> want(static_cast<std::size_t>(M * N));
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += at(a, m * K + k) * at(b, k * bk + n * bn);
      if (use_bias) s += at(bias, n);
      if (acc) s += at(out0, m * N + n);
      want[static_cast<std::size_t>(m * N + n)] = s;
    }
  return want;
}

inline strata::MatmulOptions on(const char* backend,
                                strata::Precision p = strata::Precision::highest) {
  strata::MatmulOptions o;
  o.backend = backend;
  o.precision = p;
  return o;
}

// The layout sweeps both suites run, each case handed to
// check(batch, M, K, N, la, lb, lo, dtype, seed) (a backend vs reference),
// seed advanced by 2 per case.
//
// Every pair of input layouts: [3] x [5, 7] @ [7, 6], f32, seeds from 102.
template <class Check>
void sweep_input_layouts(const Check& check) {
  std::uint64_t seed = 100;
  for (Layout la : kAllLayouts)
    for (Layout lb : kAllLayouts)
      check(strata::Shape{3}, 5, 7, 6, la, lb, Layout::contiguous, strata::DType::f32, seed += 2);
}

// Output layouts against a few layouts of a: [2] x [6, 9] @ [9, 5], f32,
// seeds from 302.
template <class Check>
void sweep_output_layouts(const Check& check) {
  std::uint64_t seed = 300;
  for (Layout lo : {Layout::contiguous, Layout::transposed, Layout::sliced, Layout::neg_rows,
                    Layout::neg_cols, Layout::inner_step})
    for (Layout la : {Layout::contiguous, Layout::transposed, Layout::inner_step})
      check(strata::Shape{2}, 6, 9, 5, la, Layout::contiguous, lo, strata::DType::f32, seed += 2);
}

// Row and column orders of a and b in dtype dt: [2] x [9, 33] @ [33, 7].
template <class Check>
void sweep_dtype_layouts(strata::DType dt, std::uint64_t& seed, const Check& check) {
  for (Layout la : {Layout::contiguous, Layout::transposed, Layout::neg_rows})
    for (Layout lb : {Layout::contiguous, Layout::transposed, Layout::inner_step})
      check(strata::Shape{2}, 9, 33, 7, la, lb, Layout::contiguous, dt, seed += 2);
}

}  // namespace matmul_test
