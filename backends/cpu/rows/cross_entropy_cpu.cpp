// cpu cross_entropy and cross_entropy_backward (operands: docs/guide/ops.md,
// "cross_entropy") on row_engine.hpp's loop: OpenMP over rows, unit-stride
// f32/f64 rows used where they lie, others gathered into a per-thread buffer
// of the compute type (f32, f64 for f64) and, for the backward, scattered
// back.
//
// The forward reads each row once: a block of kBlock elements (in L1) gets
// its max and the pairwise sum of exp(x - block max), merged into the
// row's running (max, sum) as the blocks come (an online logsumexp), then
// loss = lse - x[t]. The backward writes g (exp(x - lse) - [j == t]) in
// one pass, added to what grad_logits holds with accumulate. The targets
// are checked serially before anything is written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu/rows/row_engine.hpp"
#include "strata/error.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

using namespace rows;  // the row engine (row_engine.hpp), used throughout

// Elements per block of the online logsumexp: 8 KiB of f32.
constexpr std::int64_t kBlock = 2048;

// The row can be used where it lies: stored type == compute type, unit stride.
template <class T>
bool direct(const Operand& o, int last) {
  return std::is_same_v<T, compute_t<T>> && o.strides[last] == 1;
}

// log sum exp(x): -inf for a row of -inf; NaN when it holds a NaN or +inf.
template <class C>
C row_lse(const C* x, std::int64_t n) {
  constexpr C kInf = std::numeric_limits<C>::infinity();
  C m = -kInf, s = 0;
  for (std::int64_t b = 0; b < n; b += kBlock) {
    const C* v = x + b;
    const std::int64_t len = std::min(kBlock, n - b);
    const C bm = row_max(v, len);
    if (bm != bm) return bm;
    if (bm == -kInf) continue;  // adds exp(-inf) = 0
    const C bs = pairwise_sum<C>([v, bm](std::int64_t j) { return std::exp(v[j] - bm); }, 0, len);
    if (bm > m) {
      s = s * std::exp(m - bm) + bs;
      m = bm;
    } else {
      s += bs * std::exp(bm - m);
    }
  }
  return m == -kInf ? m : m + std::log(s);
}

std::int64_t target_at(const Operand& o, std::int64_t off) {
  if (o.dtype == DType::i32) return *at<const std::int32_t>(o, off);
  return *at<const std::int64_t>(o, off);
}

void check_targets(const char* op, const IterArgs& a) {
  const std::int64_t classes = a.row_len(), ignore = a.iparam[0];
  std::int64_t bad = 0;
  const std::int64_t where = rows::with_index_type(a.op[2].dtype, [&]<class I>(I) {
    return rows::first_bad_id<I>(a, 2, classes, &bad, &ignore);
  });
  if (where >= 0)
    fail(op, "target holds ", bad, " at index ", where, ", outside [0, ", classes,
         ") and not ignore_index (", ignore, ")");
}

// op[0] = loss (stride 0 along the row), the pair at op[3] = (lse, valid).
template <class T>
void forward(const IterArgs& a) {
  using C = compute_t<T>;
  check_targets("cross_entropy", a);
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], sx = a.op[1].strides[last], ignore = a.iparam[0];
  const bool dir = direct<T>(a.op[1], last);
  for_rows<C>(a, "cross_entropy", dir ? 0 : n, [&](const std::int64_t* off, C* buf) {
    const T* x = at<const T>(a.op[1], off[1]);
    const C* v = reinterpret_cast<const C*>(x);
    if (!dir) {
      gather(x, sx, n, buf);
      v = buf;
    }
    const C lse = row_lse(v, n);
    const std::int64_t t = target_at(a.op[2], off[2]);
    C* pair = at<C>(a.op[3], off[3]);
    pair[0] = lse;
    pair[1] = t == ignore ? C(0) : C(1);
    *at<C>(a.op[0], off[0]) = t == ignore ? C(0) : lse - v[t];
  });
}

// y (+)= g (exp(x - lse) - [j == t]) over a unit-stride row.
template <class C>
void grad_row(const C* x, C* y, std::int64_t n, std::int64_t t, C lse, C g, bool acc) {
  if (acc) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j)
      y[j] += g * (std::exp(x[j] - lse) - (j == t ? C(1) : C(0)));
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = g * (std::exp(x[j] - lse) - (j == t ? C(1) : C(0)));
  }
}

// op[0] = grad_logits, the pair at op[3] = (lse, g); iparam[1]: accumulate.
template <class T>
void backward(const IterArgs& a) {
  using C = compute_t<T>;
  check_targets("cross_entropy_backward", a);
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], ignore = a.iparam[0];
  const std::int64_t sy = a.op[0].strides[last], sx = a.op[1].strides[last];
  const bool acc = a.iparam[1] != 0;
  const bool dir = direct<T>(a.op[0], last) && direct<T>(a.op[1], last);
  // scratch: the gathered row of x, then the gradient row.
  for_rows<C>(a, "cross_entropy_backward", dir ? 0 : 2 * n, [&](const std::int64_t* off, C* buf) {
    T* y = at<T>(a.op[0], off[0]);
    const std::int64_t t = target_at(a.op[2], off[2]);
    if (t == ignore) {  // no gradient: zeros, or nothing added
      if (acc) return;
      for (std::int64_t j = 0; j < n; ++j) y[j * sy] = convert<T>(C(0));
      return;
    }
    const C* pair = at<const C>(a.op[3], off[3]);
    const T* x = at<const T>(a.op[1], off[1]);
    if (dir) {
      grad_row(reinterpret_cast<const C*>(x), reinterpret_cast<C*>(y), n, t, pair[0], pair[1], acc);
      return;
    }
    C* xb = buf;
    C* yb = buf + n;
    gather(x, sx, n, xb);
    if (acc) gather(y, sy, n, yb);
    grad_row(xb, yb, n, t, pair[0], pair[1], acc);
    scatter(yb, y, sy, n);
  });
}

template <class T>
void add(Registry& r) {
  const DType dt = dtype_of_v<T>;
  r.add_kernel<IterArgs>("cross_entropy", "cpu", dt, "cpu.rows.cross_entropy", &forward<T>);
  r.add_kernel<IterArgs>("cross_entropy_backward", "cpu", dt, "cpu.rows.cross_entropy_backward",
                         &backward<T>);
}

}  // namespace

void register_cpu_cross_entropy(Registry& r) {
  add<float>(r);
  add<double>(r);
  add<half>(r);
  add<bfloat16>(r);
}

}  // namespace strata::cpu
