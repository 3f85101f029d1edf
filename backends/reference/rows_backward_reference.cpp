// reference kernels of the row ops' backward (softmax_backward,
// log_softmax_backward, layer_norm_backward, rms_norm_backward): every value
// read as f64, each row's statistics two-pass in f64 and each gradient
// written out as its textbook formula over whole rows held in f64 (the cpu
// and cuda kernels fold and order the terms their own ways), rounded once to
// the output's dtype. dweight and dbias are summed in f64 over the rows in
// order. The formulas themselves are checked against central finite
// differences by the gradient runner (harness/src/grad_runner.cpp).
// Operands: docs/guide/ops.md, "IterArgs conventions".
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/operand_access.hpp"
#include "reference/row_walk.hpp"
#include "strata/iter_args.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

// Row k of operand `op` as f64 values.
void read_row(const IterArgs& a, const Row& r, int op, std::vector<double>& v) {
  v.resize(static_cast<std::size_t>(r.n));
  for (std::int64_t j = 0; j < r.n; ++j)
    v[static_cast<std::size_t>(j)] = load(a.op[op], r.at(op, j));
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}

// ---- softmax: dx = y * (g - <g, y>); log_softmax: dx = g - softmax * sum(g),
// softmax = exp(y). op[0] = dx, op[1] = grad, op[2] = y.
template <bool Log>
void softmax_backward(const IterArgs& a) {
  std::vector<double> g, y, t;
  for_each_row(a, [&](const Row& r) {
    read_row(a, r, 1, g);
    read_row(a, r, 2, y);
    t.resize(g.size());
    if (Log) {
      const double gs = sum(g);
      for (std::size_t j = 0; j < g.size(); ++j) t[j] = g[j] - std::exp(y[j]) * gs;
    } else {
      for (std::size_t j = 0; j < g.size(); ++j) t[j] = g[j] * y[j];
      const double dot = sum(t);
      for (std::size_t j = 0; j < g.size(); ++j) t[j] = y[j] * (g[j] - dot);
    }
    for (std::int64_t j = 0; j < r.n; ++j)
      store(a.op[0], r.at(0, j), t[static_cast<std::size_t>(j)]);
  });
}

// ---- norms: xhat = (x - mean) * rstd (rms_norm: x * rstd), rstd = 1 /
// sqrt(var + eps) with var the biased variance (rms_norm: mean(x^2)); gh =
// g * w; dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) (rms_norm:
// no mean(gh)). op[0] = dx (data null: not wanted), op[1] = grad, op[2] = x,
// op[3] = weight (null: none); side = [2, n] (rms_norm [1, n]) of the
// compute dtype: row 0 dweight, row 1 dbias, written when iparam[0] has
// bit 0 / bit 1.
template <bool Layer>
void norm_backward(const IterArgs& a) {
  const double eps = a.scalar[0];
  const Operand &dx = a.op[0], &w = a.op[3];
  const std::int64_t n = a.shape[a.ndim - 1];
  const auto nd = static_cast<double>(n);
  const bool want_w = (a.iparam[0] & 1) != 0, want_b = (a.iparam[0] & 2) != 0;
  std::vector<double> dw(static_cast<std::size_t>(n), 0.0), db(dw), g, x, wv, gh, t;
  for_each_row(a, [&](const Row& r) {
    read_row(a, r, 1, g);
    read_row(a, r, 2, x);
    const double mu = Layer ? sum(x) / nd : 0.0;
    t.resize(x.size());
    for (std::size_t j = 0; j < x.size(); ++j) t[j] = (x[j] - mu) * (x[j] - mu);
    const double rstd = 1.0 / std::sqrt(sum(t) / nd + eps);
    std::vector<double>& xhat = x;  // in place
    for (double& e : xhat) e = (e - mu) * rstd;
    for (std::size_t j = 0; j < g.size(); ++j) {
      dw[j] += g[j] * xhat[j];
      db[j] += g[j];
    }
    if (dx.data == nullptr) return;
    gh = g;
    if (w.data != nullptr) {
      read_row(a, r, 3, wv);
      for (std::size_t j = 0; j < gh.size(); ++j) gh[j] *= wv[j];
    }
    const double mean_gh = Layer ? sum(gh) / nd : 0.0;
    for (std::size_t j = 0; j < gh.size(); ++j) t[j] = gh[j] * xhat[j];
    const double mean_ghx = sum(t) / nd;
    for (std::int64_t j = 0; j < n; ++j) {
      const auto k = static_cast<std::size_t>(j);
      store(dx, r.at(0, j), rstd * (gh[k] - mean_gh - xhat[k] * mean_ghx));
    }
  });
  const Operand& side = a.side;
  for (std::int64_t j = 0; j < n; ++j) {
    if (want_w) store(side, j * side.strides[1], dw[static_cast<std::size_t>(j)]);
    if (want_b) store(side, side.strides[0] + j * side.strides[1], db[static_cast<std::size_t>(j)]);
  }
}

void add(Registry& r, const char* op, void (*run)(const IterArgs&)) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<IterArgs>(op, "reference", dt, std::string("reference.rows.") + op, run);
}

}  // namespace

void register_reference_rows_backward(Registry& r) {
  add(r, "softmax_backward", &softmax_backward<false>);
  add(r, "log_softmax_backward", &softmax_backward<true>);
  add(r, "layer_norm_backward", &norm_backward<true>);
  add(r, "rms_norm_backward", &norm_backward<false>);
}

}  // namespace strata::reference
