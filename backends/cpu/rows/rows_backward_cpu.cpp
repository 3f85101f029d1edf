// cpu kernels of the row ops' backward (softmax_backward,
// log_softmax_backward, layer_norm_backward, rms_norm_backward) on
// row_engine.hpp's loops. Operands: docs/guide/ops.md, "IterArgs
// conventions".
//
// One pass over each row's memory: a row is read once (in place when it is
// unit-stride and of the compute type, else gathered into per-thread
// scratch), its sums taken with the row engine's pairwise sum (f32 for
// f16/bf16/f32, f64 for f64), and dx written once. The norms' dweight and
// dbias are sums over rows: each fixed chunk of rows (for_row_chunks, so the
// chunking does not depend on the thread count) adds its rows in order into
// a partial row of its own, and the partials are then added in chunk order:
// the same bits run to run, whatever the threads.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/rows/row_engine.hpp"
#include "cpu/rows/row_registration.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

using namespace rows;  // the row engine (row_engine.hpp), used throughout

// Unit-stride rows of the compute type can be used where they lie (a
// missing operand does not prevent it).
template <class T>
bool direct(const Operand& o, int last) {
  return std::is_same_v<T, compute_t<T>> && (o.data == nullptr || o.strides[last] == 1);
}

// ---- softmax_backward, log_softmax_backward ------------------------------------
// dx may be g (the front end allows dx to be exactly grad): element j of dx
// is written after element j of g was last read.
template <class C, bool Log>
void softmax_backward_row(const C* g, const C* y, C* dx, std::int64_t n) {
  if constexpr (Log) {  // dx = g - exp(y) sum(g)
    const C s = pairwise_sum<C>([g](std::int64_t j) { return g[j]; }, 0, n);
    for (std::int64_t j = 0; j < n; ++j) dx[j] = g[j] - std::exp(y[j]) * s;
  } else {  // dx = y (g - sum(g y))
    const C s = pairwise_sum<C>([g, y](std::int64_t j) { return g[j] * y[j]; }, 0, n);
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) dx[j] = y[j] * (g[j] - s);
  }
}

// op[0] = dx, op[1] = grad, op[2] = y.
template <class T, bool Log>
void softmax_backward_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last];
  const std::int64_t sd = a.op[0].strides[last], sg = a.op[1].strides[last],
                     sy = a.op[2].strides[last];
  const bool dir = direct<T>(a.op[0], last) && direct<T>(a.op[1], last) && direct<T>(a.op[2], last);
  const char* op = Log ? "log_softmax_backward" : "softmax_backward";
  for_rows<C>(a, op, dir ? 0 : 2 * n, [&](const std::int64_t* off, C* buf) {
    T* dx = at<T>(a.op[0], off[0]);
    const T* g = at<const T>(a.op[1], off[1]);
    const T* y = at<const T>(a.op[2], off[2]);
    if (dir) {
      softmax_backward_row<C, Log>(reinterpret_cast<const C*>(g), reinterpret_cast<const C*>(y),
                                   reinterpret_cast<C*>(dx), n);
    } else {
      gather(g, sg, n, buf);
      gather(y, sy, n, buf + n);
      softmax_backward_row<C, Log>(buf, buf + n, buf, n);
      scatter(buf, dx, sd, n);
    }
  });
}

// ---- layer_norm_backward, rms_norm_backward ------------------------------------
// Rows per chunk of the dweight / dbias partial sums: at most kChunks chunks.
inline constexpr std::int64_t kChunks = 64;

// One row: g and x (n elements, unit stride), w the weight in C or null; pw
// and pb (may be null) the chunk's partial dweight and dbias, added to. dx
// (null: not wanted) may be g.
template <class C, bool Layer>
void norm_backward_row(const C* g, const C* x, C* dx, std::int64_t n, C eps, const C* w, C* pw,
                       C* pb) {
  const std::pair<C, C> stats = norm_stats<C, Layer>(x, n, eps);
  const C mu = stats.first, rstd = stats.second;
  // The chunk's partial sums first: dx may be g.
  if (pw != nullptr && pb != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) {
      pw[j] += g[j] * (x[j] - mu) * rstd;
      pb[j] += g[j];
    }
  } else if (pw != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) pw[j] += g[j] * (x[j] - mu) * rstd;
  } else if (pb != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) pb[j] += g[j];
  }
  if (dx == nullptr) return;
  // gh = g w; a = mean(gh) (layer_norm), b = sum(gh (x - mu)); one pass
  // for both sums.
  auto gh = [g, w](std::int64_t j) { return w != nullptr ? g[j] * w[j] : g[j]; };
  C a = 0, b = 0;
  if constexpr (Layer) {
    const std::pair<C, C> s = rows::pairwise_sum2<C>(
        [&gh, x, mu](std::int64_t j) {
          const C h = gh(j);
          return std::pair<C, C>(h, h * (x[j] - mu));
        },
        0, n);
    a = s.first / C(n);
    b = s.second;
  } else {
    b = pairwise_sum<C>([&gh, x](std::int64_t j) { return gh(j) * x[j]; }, 0, n);
  }
  // dx = rstd (gh - a - xhat mean(gh xhat)) with xhat = (x - mu) rstd and
  // mean(gh xhat) = rstd b / n: rstd (gh - a) - (x - mu) rb, rb = rstd^3 b / n.
  const C rb = b * rstd * rstd * rstd / C(n);
  if (w != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) dx[j] = rstd * (g[j] * w[j] - a) - (x[j] - mu) * rb;
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) dx[j] = rstd * (g[j] - a) - (x[j] - mu) * rb;
  }
}

// op[0] = dx (null: not wanted), op[1] = grad, op[2] = x, op[3] = weight
// (null: none); side = [k, n] of C: row 0 dweight (iparam[0] bit 0), row 1
// dbias (bit 1).
template <class T, bool Layer>
void norm_backward_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], rows = rows::row_count(a);
  const std::int64_t sd = a.op[0].strides[last], sg = a.op[1].strides[last],
                     sx = a.op[2].strides[last];
  const char* op = Layer ? "layer_norm_backward" : "rms_norm_backward";
  const std::vector<C> w = rows::param_row<C, T>(a.op[3], last, n, op);
  const C* wp = w.empty() ? nullptr : w.data();
  const C eps = static_cast<C>(a.scalar[0]);
  const bool want_w = (a.iparam[0] & 1) != 0, want_b = (a.iparam[0] & 2) != 0;
  const bool want_dx = a.op[0].data != nullptr;
  // Partial sums per chunk: [chunks][2][n], zeroed (workspace value-initialises).
  const std::int64_t chunk = std::max<std::int64_t>(1, (rows + kChunks - 1) / kChunks);
  const std::int64_t chunks = (rows + chunk - 1) / chunk;
  const bool params = want_w || want_b;
  std::vector<C> part = workspace<C>({params ? chunks : 0, 2, n}, op, "partial weight gradients");
  const bool dir = direct<T>(a.op[0], last) && direct<T>(a.op[1], last) && direct<T>(a.op[2], last);
  rows::for_row_chunks<C>(
      a, op, chunk, dir ? 0 : 2 * n, [&](std::int64_t c, const std::int64_t* off, C* buf) {
        C* pw = want_w ? part.data() + c * 2 * n : nullptr;
        C* pb = want_b ? part.data() + (c * 2 + 1) * n : nullptr;
        T* dx = want_dx ? at<T>(a.op[0], off[0]) : nullptr;
        const T* g = at<const T>(a.op[1], off[1]);
        const T* x = at<const T>(a.op[2], off[2]);
        if (dir) {
          norm_backward_row<C, Layer>(reinterpret_cast<const C*>(g), reinterpret_cast<const C*>(x),
                                      reinterpret_cast<C*>(dx), n, eps, wp, pw, pb);
        } else {
          gather(g, sg, n, buf);
          gather(x, sx, n, buf + n);
          norm_backward_row<C, Layer>(buf, buf + n, want_dx ? buf : nullptr, n, eps, wp, pw, pb);
          if (want_dx) scatter(buf, dx, sd, n);
        }
      });
  if (!params) return;
  // The partials added in chunk order, column blocks over threads.
  C* side = static_cast<C*>(a.side.data);
  const std::int64_t s0 = a.side.strides[0], s1 = a.side.strides[1];
  const int threads = rows::row_threads(chunks, n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t j = 0; j < n; ++j) {
    for (int k = 0; k < 2; ++k) {
      if (!(k == 0 ? want_w : want_b)) continue;
      C s = 0;
      for (std::int64_t c = 0; c < chunks; ++c)
        s += part[static_cast<std::size_t>((c * 2 + k) * n + j)];
      side[k * s0 + j * s1] = s;
    }
  }
}

}  // namespace

void register_cpu_rows_backward(Registry& r) {
  STRATA_ROWS_ADD(r, "softmax_backward", softmax_backward_kernel, false);
  STRATA_ROWS_ADD(r, "log_softmax_backward", softmax_backward_kernel, true);
  STRATA_ROWS_ADD(r, "layer_norm_backward", norm_backward_kernel, true);
  STRATA_ROWS_ADD(r, "rms_norm_backward", norm_backward_kernel, false);
}

}  // namespace strata::cpu
