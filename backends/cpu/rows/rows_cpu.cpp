// cpu kernels of the row ops (reductions, softmax, norms, embedding,
// rotary, index_copy) on row_engine.hpp's loop. Operand layout: docs/guide/ops.md,
// "Row ops".
//
// Precision: f16/bf16 compute in f32, f64 in f64. Sums (sum, mean, the
// softmax denominator, the norms' statistics) are pairwise sums in the
// compute type (row_engine.hpp: SIMD-reduced blocks of 128, then a binary
// tree), which is what PyTorch's cascade sum does: f32 stays f32, so the
// loop vectorises at full width, and the error bound grows with log n, not
// n. Softmax subtracts the row's max first; layer_norm's variance is a
// second pass over (x - mean)^2, never E[x^2] - mean^2.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/rows/row_engine.hpp"
#include "cpu/rows/row_registration.hpp"
#include "strata/error.hpp"
#include "strata/registry.hpp"

namespace strata::cpu {
namespace {

using namespace rows;  // the row engine (row_engine.hpp), used throughout

// The row can be used where it lies: stored type == compute type, unit stride.
template <class T>
bool direct(const Operand& o, int last) {
  return std::is_same_v<T, compute_t<T>> && o.strides[last] == 1;
}

// ---- sum, mean ---------------------------------------------------------------
// A sum down the columns of a matrix (rows apart by a stride, columns unit
// stride: a bias's gradient, the sum over dim 0 of [M, N]) read one row
// segment of kColWidth columns at a time, rather than each column gathered
// element by element across M rows (one cache line per element). Pairwise
// over the rows as pairwise_sum: blocks of kColRows rows added in order,
// then a binary tree, so the error grows like (kColRows + log2 M) eps.
inline constexpr std::int64_t kColWidth = 64, kColRows = 32;

// acc[0..w) = the sums of rows [lo, hi) of x (row stride ld), columns 0..w;
// tmp: w elements per level below this one.
template <class C>
void column_sums(const C* x, std::int64_t ld, std::int64_t lo, std::int64_t hi, std::int64_t w,
                 C* acc, C* tmp) {
  if (hi - lo <= kColRows) {
    for (std::int64_t j = 0; j < w; ++j) acc[j] = 0;
    for (std::int64_t r = lo; r < hi; ++r) {
      const C* row = x + r * ld;
#pragma omp simd
      for (std::int64_t j = 0; j < w; ++j) acc[j] += row[j];
    }
    return;
  }
  const std::int64_t half = (hi - lo) / 2;
  const std::int64_t mid = lo + (half + kColRows - 1) / kColRows * kColRows;
  column_sums(x, ld, lo, mid, w, acc, tmp + w);
  column_sums(x, ld, mid, hi, w, tmp, tmp + w);
#pragma omp simd
  for (std::int64_t j = 0; j < w; ++j) acc[j] += tmp[j];
}

// The column path of sum_kernel: a 2-d iteration whose rows (the outputs)
// are unit stride in x and whose reduced dim is not. f32 and f64 only (the
// stored type is the compute type); false when it does not apply.
template <class T, bool Mean>
bool sum_columns(const IterArgs& a) {
  if constexpr (!std::is_same_v<T, compute_t<T>>) {
    return false;
  } else {
    if (a.ndim != 2 || a.op[1].strides[0] != 1 || a.op[1].strides[1] == 1) return false;
    const std::int64_t cols = a.shape[0], n = a.shape[1], ld = a.op[1].strides[1];
    const std::int64_t so = a.op[0].strides[0];
    const std::int64_t blocks = (cols + kColWidth - 1) / kColWidth;
    std::int64_t depth = 1;  // levels of column_sums' tree: kColRows << depth >= n
    while ((kColRows << depth) < n) ++depth;
    const int threads = static_cast<int>(std::min<std::int64_t>(row_threads(cols, n), blocks));
    std::vector<T> scratch =
        workspace<T>({depth + 1, kColWidth, threads}, Mean ? "mean" : "sum", "column sums");
    const T* x = static_cast<const T*>(a.op[1].data);
    T* out = static_cast<T*>(a.op[0].data);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (std::int64_t b = 0; b < blocks; ++b) {
      T* acc = scratch.data() + omp_get_thread_num() * (depth + 1) * kColWidth;
      const std::int64_t c0 = b * kColWidth, w = std::min(kColWidth, cols - c0);
      if (n == 0) {
        for (std::int64_t j = 0; j < w; ++j) acc[j] = 0;
      } else {
        column_sums(x + c0, ld, 0, n, w, acc, acc + kColWidth);
      }
      for (std::int64_t j = 0; j < w; ++j)
        out[(c0 + j) * so] = Mean ? acc[j] / static_cast<T>(n) : acc[j];
    }
    return true;
  }
}

// f(off, v) for each row of the input a.op[1] along the last dim, v its n
// values in the compute type: the row itself where it is contiguous and
// stored in that type, else gathered into the thread's buffer.
template <class T, class F>
void for_input_rows(const IterArgs& a, const char* op, const F& f) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], sx = a.op[1].strides[last];
  const bool dir = direct<T>(a.op[1], last);
  for_rows<C>(a, op, dir ? 0 : n, [&](const std::int64_t* off, C* buf) {
    const T* x = at<const T>(a.op[1], off[1]);
    const C* v = reinterpret_cast<const C*>(x);
    if (!dir) {
      gather(x, sx, n, buf);
      v = buf;
    }
    f(off, v);
  });
}

template <class T, bool Mean>
void sum_kernel(const IterArgs& a) {
  if (sum_columns<T, Mean>(a)) return;
  using C = compute_t<T>;
  const std::int64_t n = a.shape[a.ndim - 1];
  for_input_rows<T>(a, Mean ? "mean" : "sum", [&](const std::int64_t* off, const C* v) {
    C s = pairwise_sum<C>([v](std::int64_t j) { return v[j]; }, 0, n);
    if (Mean) s /= static_cast<C>(n);
    *at<T>(a.op[0], off[0]) = convert<T>(s);
  });
}

// ---- max, argmax -------------------------------------------------------------
// The first index of the maximum; a NaN is larger than anything.
template <class C>
std::int64_t argmax_row(const C* v, std::int64_t n) {
  std::int64_t best = 0;
  C m = v[0];
  if (m != m) return 0;
  for (std::int64_t j = 1; j < n; ++j) {
    if (v[j] != v[j]) return j;
    if (v[j] > m) {
      m = v[j];
      best = j;
    }
  }
  return best;
}

template <class T, bool Arg>
void max_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const std::int64_t n = a.shape[a.ndim - 1];
  for_input_rows<T>(a, Arg ? "argmax" : "max", [&](const std::int64_t* off, const C* v) {
    const std::int64_t j = argmax_row(v, n);
    if constexpr (Arg) {
      *at<std::int64_t>(a.op[0], off[0]) = j;
    } else {
      *at<T>(a.op[0], off[0]) = convert<T>(v[j]);
    }
  });
}

// ---- softmax, log_softmax ----------------------------------------------------
// row_max (row_engine.hpp) is NaN when the row holds a NaN. A row of -inf
// has max -inf, so x - max is NaN and the softmax NaN, as in PyTorch.

// y may be x.
template <class C, bool Log>
void softmax_row(const C* x, C* y, std::int64_t n) {
  const C m = row_max(x, n);
  if constexpr (Log) {
    const C s = pairwise_sum<C>([x, m](std::int64_t j) { return std::exp(x[j] - m); }, 0, n);
    const C shift = m + std::log(s);
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = x[j] - shift;
  } else {
    for (std::int64_t j = 0; j < n; ++j) y[j] = std::exp(x[j] - m);
    const C s = pairwise_sum<C>([y](std::int64_t j) { return y[j]; }, 0, n);
    const C inv = C(1) / s;
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] *= inv;
  }
}

// f(x, y) maps each row of the input a.op[1] to the output a.op[0] along the
// last dim, both in the compute type: in place where both rows are contiguous
// and stored in that type, else through the thread's buffer (x == y there).
template <class T, class F>
void map_rows(const IterArgs& a, const char* op, const F& f) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last];
  const std::int64_t sy = a.op[0].strides[last], sx = a.op[1].strides[last];
  const bool dir = direct<T>(a.op[0], last) && direct<T>(a.op[1], last);
  for_rows<C>(a, op, dir ? 0 : n, [&](const std::int64_t* off, C* buf) {
    const T* x = at<const T>(a.op[1], off[1]);
    T* y = at<T>(a.op[0], off[0]);
    if (dir) {
      f(reinterpret_cast<const C*>(x), reinterpret_cast<C*>(y));
    } else {
      gather(x, sx, n, buf);
      f(buf, buf);
      scatter(buf, y, sy, n);
    }
  });
}

template <class T, bool Log>
void softmax_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const std::int64_t n = a.shape[a.ndim - 1];
  map_rows<T>(a, Log ? "log_softmax" : "softmax",
              [n](const C* x, C* y) { softmax_row<C, Log>(x, y, n); });
}

// ---- layer_norm, rms_norm ----------------------------------------------------
// y may be x. w, b may be null.
template <class C, bool Layer>
void norm_row(const C* x, C* y, std::int64_t n, C eps, const C* w, const C* b) {
  const std::pair<C, C> stats = norm_stats<C, Layer>(x, n, eps);
  const C mu = stats.first, inv = stats.second;
  if (w != nullptr && b != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - mu) * inv * w[j] + b[j];
  } else if (w != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - mu) * inv * w[j];
  } else if (b != nullptr) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - mu) * inv + b[j];
  } else {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = (x[j] - mu) * inv;
  }
}

template <class T, bool Layer>
void norm_kernel(const IterArgs& a) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last];
  const char* op = Layer ? "layer_norm" : "rms_norm";
  const std::vector<C> w = param_row<C, T>(a.op[2], last, n, op);
  const std::vector<C> b = Layer ? param_row<C, T>(a.op[3], last, n, op) : std::vector<C>{};
  const C* wp = w.empty() ? nullptr : w.data();
  const C* bp = b.empty() ? nullptr : b.data();
  const C eps = static_cast<C>(a.scalar[0]);
  map_rows<T>(a, op, [&](const C* x, C* y) { norm_row<C, Layer>(x, y, n, eps, wp, bp); });
}

// ---- embedding ---------------------------------------------------------------

// Every id is checked first, serially; then the rows are gathered.
template <class T, class I>
void embedding_gather(const IterArgs& a) {
  const Operand& table = a.side;
  const std::int64_t vocab = table.shape[0];
  std::int64_t bad = 0;
  const std::int64_t where = rows::first_bad_id<I>(a, 1, vocab, &bad);
  if (where >= 0)
    fail("embedding", "ids holds ", bad, " at index ", where, ", outside [0, ", vocab, ")");
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], sy = a.op[0].strides[last];
  const std::int64_t sv = table.strides[0], sd = table.strides[1];
  for_rows<char>(a, "embedding", 0, [&](const std::int64_t* off, char*) {
    const std::int64_t id = *at<const I>(a.op[1], off[1]);
    const T* src = at<const T>(table, id * sv);
    T* y = at<T>(a.op[0], off[0]);
    if (sy == 1 && sd == 1) {
      std::memcpy(y, src, static_cast<std::size_t>(n) * sizeof(T));
    } else {
      for (std::int64_t j = 0; j < n; ++j) y[j * sy] = src[j * sd];
    }
  });
}

template <class T>
void embedding_kernel(const IterArgs& a) {
  rows::with_index_type(a.op[1].dtype, [&]<class I>(I) { embedding_gather<T, I>(a); });
}

// ---- index_copy --------------------------------------------------------------
// A pure copy of any dtype, so the kernel is templated on the element size
// (U: an unsigned integer of that size). Every index is checked first,
// serially; then for_rows copies the rows (threads over rows, so which of
// two writes to a duplicated index wins is unspecified).
template <class I>
std::int64_t first_bad_index(const Operand& index, std::int64_t size, std::int64_t* bad) {
  for (std::int64_t i = 0; i < index.shape[0]; ++i) {
    const std::int64_t v = *at<const I>(index, i * index.strides[0]);
    if (v < 0 || v >= size) {
      *bad = v;
      return i;
    }
  }
  return -1;
}

template <class U, class I>
void index_copy_rows(const IterArgs& a) {
  const std::int64_t step = a.iparam[0], size = a.iparam[1];
  std::int64_t bad = 0;
  const std::int64_t where = first_bad_index<I>(a.side, size, &bad);
  if (where >= 0)
    fail("index_copy_", "index holds ", bad, " at position ", where, ", outside [0, ", size, ")");
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last];
  const std::int64_t sy = a.op[0].strides[last], sx = a.op[1].strides[last];
  const std::int64_t si = a.op[2].strides[last];
  for_rows<char>(a, "index_copy_", 0, [&](const std::int64_t* off, char*) {
    U* y = at<U>(a.op[0], off[0]);
    const U* x = at<const U>(a.op[1], off[1]);
    const I* ix = at<const I>(a.op[2], off[2]);
    if (si == 0) {  // one index for the whole row (dim is not the last dim)
      y += static_cast<std::int64_t>(*ix) * step;
      if (sy == 1 && sx == 1) {
        std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(U));
      } else {
        for (std::int64_t j = 0; j < n; ++j) y[j * sy] = x[j * sx];
      }
    } else {  // dim is the last dim: the index varies along the row
      for (std::int64_t j = 0; j < n; ++j)
        y[j * sy + static_cast<std::int64_t>(ix[j * si]) * step] = x[j * sx];
    }
  });
}

template <class U>
void index_copy_kernel(const IterArgs& a) {
  rows::with_index_type(a.side.dtype, [&]<class I>(I) { index_copy_rows<U, I>(a); });
}

// The index_copy kernel for a dtype's element size.
using RowKernel = void (*)(const IterArgs&);
RowKernel index_copy_for(DType dt) {
  switch (itemsize(dt)) {
    case 1:
      return &index_copy_kernel<std::uint8_t>;
    case 2:
      return &index_copy_kernel<std::uint16_t>;
    case 4:
      return &index_copy_kernel<std::uint32_t>;
    default:
      return &index_copy_kernel<std::uint64_t>;
  }
}

// ---- rotary ------------------------------------------------------------------
// The angle as docs/guide/ops.md fixes it: inv_freq (f32) = theta^(-2i/r) rounded
// to f32, angle = (f32)pos * inv_freq in f32, cos and sin of that and the
// rotation in f32; f64 throughout for f64 data.
template <class T, class I>
void rotary_impl(const IterArgs& a) {
  using C = compute_t<T>;
  const int last = a.ndim - 1;
  const std::int64_t n = a.shape[last], rot = a.iparam[0], half = rot / 2;
  const bool interleaved = a.iparam[1] == 1;
  const std::int64_t sy = a.op[0].strides[last], sx = a.op[1].strides[last];
  std::vector<C> inv_freq = workspace<C>({half}, "rotary", "the rotary frequencies");
  for (std::int64_t i = 0; i < half; ++i)
    inv_freq[i] = static_cast<C>(
        std::pow(a.scalar[0], -2.0 * static_cast<double>(i) / static_cast<double>(rot)));
  // scratch: the row, then cos and sin of its angles.
  for_rows<C>(a, "rotary", n + 2 * half, [&](const std::int64_t* off, C* buf) {
    const C p = static_cast<C>(*at<const I>(a.op[2], off[2]));
    C* cs = buf + n;
    C* sn = cs + half;
    for (std::int64_t i = 0; i < half; ++i) {
      const C angle = p * inv_freq[i];
      cs[i] = std::cos(angle);
      sn[i] = std::sin(angle);
    }
    gather(at<const T>(a.op[1], off[1]), sx, n, buf);
    // pair i is (i0, i1): (i, i + r/2) rotate-half, (2i, 2i + 1) interleaved.
    const std::int64_t step = interleaved ? 2 : 1, other = interleaved ? 1 : half;
#pragma omp simd
    for (std::int64_t i = 0; i < half; ++i) {
      const C x0 = buf[i * step], x1 = buf[i * step + other];
      buf[i * step] = x0 * cs[i] - x1 * sn[i];
      buf[i * step + other] = x1 * cs[i] + x0 * sn[i];
    }
    scatter(buf, at<T>(a.op[0], off[0]), sy, n);
  });
}

template <class T>
void rotary_kernel(const IterArgs& a) {
  rows::with_index_type(a.op[2].dtype, [&]<class I>(I) { rotary_impl<T, I>(a); });
}

}  // namespace

void register_cpu_embedding_backward(Registry& r);  // embedding_backward_cpu.cpp
void register_cpu_cross_entropy(Registry& r);       // cross_entropy_cpu.cpp
void register_cpu_rows_backward(Registry& r);       // rows_backward_cpu.cpp

void register_cpu_rows(Registry& r) {
  STRATA_ROWS_ADD(r, "sum", sum_kernel, false);
  STRATA_ROWS_ADD(r, "mean", sum_kernel, true);
  STRATA_ROWS_ADD(r, "max", max_kernel, false);
  STRATA_ROWS_ADD(r, "argmax", max_kernel, true);
  STRATA_ROWS_ADD(r, "softmax", softmax_kernel, false);
  STRATA_ROWS_ADD(r, "log_softmax", softmax_kernel, true);
  STRATA_ROWS_ADD(r, "layer_norm", norm_kernel, true);
  STRATA_ROWS_ADD(r, "rms_norm", norm_kernel, false);
  register_cpu_rows_backward(r);
  STRATA_ROWS_ADD(r, "embedding", embedding_kernel);
  register_cpu_embedding_backward(r);
  STRATA_ROWS_ADD(r, "rotary", rotary_kernel);
  register_cpu_cross_entropy(r);
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64})
    r.add_kernel<IterArgs>("index_copy", "cpu", dt, "cpu.rows.index_copy", index_copy_for(dt));
}

}  // namespace strata::cpu
