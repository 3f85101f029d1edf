#pragma once
// The cpu row engine: one loop over the rows of a row IterArgs
// (docs/guide/ops.md, "Row ops"), shared by every row kernel.
//
// Rows are split into one contiguous range per OpenMP thread when the op is
// large enough (kParallelWork elements); smaller ops stay on the calling
// thread, where a thread team would cost more than the op. Inside a range
// the row offsets advance as an odometer (no division per row).
//
// A kernel either works on its row in place in memory (the "direct" path:
// a unit-stride row whose stored type is its compute type, f32 or f64), or
// gathers the row into a per-thread buffer of the compute type, works
// there and scatters the result (f16/bf16, strided and flipped rows).
// Either way the maths runs on unit-stride arrays that the compiler
// vectorises. Scratch is allocated before any OpenMP region (a strata::Error
// naming the op and the bytes when it cannot be had: cpu/workspace.hpp), so
// nothing in one can throw.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "cpu/elementwise/engine.hpp"
#include "cpu/workspace.hpp"
#include "strata/iter_args.hpp"

namespace strata::cpu::rows {

inline constexpr std::int64_t kParallelWork = 32768;  // elements below which one thread runs

// Elements per block of the pairwise sum: summed with a SIMD reduction (a
// few independent partial sums per lane), blocks then added pairwise, so
// the rounding error grows like (kSumBlock / lanes + log2(n / kSumBlock)) eps
// rather than n eps.
inline constexpr std::int64_t kSumBlock = 128;

// Pairwise sum of f(lo) ... f(hi - 1) in C.
template <class C, class F>
C pairwise_sum(const F& f, std::int64_t lo, std::int64_t hi) {
  if (hi - lo <= kSumBlock) {
    C s = 0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t j = lo; j < hi; ++j) s += f(j);
    return s;
  }
  const std::int64_t half = (hi - lo) / 2;
  const std::int64_t mid = lo + (half + kSumBlock - 1) / kSumBlock * kSumBlock;
  return pairwise_sum<C>(f, lo, mid) + pairwise_sum<C>(f, mid, hi);
}

// The row's max; NaN when the row holds a NaN.
template <class C>
C row_max(const C* x, std::int64_t n) {
  C m = -std::numeric_limits<C>::infinity();
  bool nan = false;
#pragma omp simd reduction(max : m) reduction(|| : nan)
  for (std::int64_t j = 0; j < n; ++j) {
    m = x[j] > m ? x[j] : m;
    nan = nan || x[j] != x[j];
  }
  return nan ? std::numeric_limits<C>::quiet_NaN() : m;
}

// Pairwise sums of both members of the pairs f(lo) ... f(hi - 1), in C,
// as pairwise_sum (two sums in one pass over memory).
template <class C, class F>
std::pair<C, C> pairwise_sum2(const F& f, std::int64_t lo, std::int64_t hi) {
  if (hi - lo <= kSumBlock) {
    C s = 0, t = 0;
#pragma omp simd reduction(+ : s, t)
    for (std::int64_t j = lo; j < hi; ++j) {
      const std::pair<C, C> uv = f(j);
      s += uv.first;
      t += uv.second;
    }
    return {s, t};
  }
  const std::int64_t half = (hi - lo) / 2;
  const std::int64_t mid = lo + (half + kSumBlock - 1) / kSumBlock * kSumBlock;
  const std::pair<C, C> l = pairwise_sum2<C>(f, lo, mid), r = pairwise_sum2<C>(f, mid, hi);
  return {l.first + r.first, l.second + r.second};
}

// The statistics of layer_norm (Layer: mu = mean(x)) and rms_norm (mu = 0)
// over a unit-stride row, forward and backward alike: (mu, 1 / sqrt(mean((x
// - mu)^2) + eps)), both sums pairwise.
template <class C, bool Layer>
std::pair<C, C> norm_stats(const C* x, std::int64_t n, C eps) {
  C mu = 0;
  if constexpr (Layer) mu = pairwise_sum<C>([x](std::int64_t j) { return x[j]; }, 0, n) / C(n);
  const C q = pairwise_sum<C>(
      [x, mu](std::int64_t j) {
        const C c = x[j] - mu;
        return c * c;
      },
      0, n);
  return {mu, C(1) / std::sqrt(q / C(n) + eps)};
}

template <class C, class T>
inline void gather(const T* x, std::int64_t step, std::int64_t n, C* buf) {
  if (step == 1) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) buf[j] = convert<C>(x[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) buf[j] = convert<C>(x[j * step]);
  }
}

template <class T, class C>
inline void scatter(const C* buf, T* y, std::int64_t step, std::int64_t n) {
  if (step == 1) {
#pragma omp simd
    for (std::int64_t j = 0; j < n; ++j) y[j] = convert<T>(buf[j]);
  } else {
    for (std::int64_t j = 0; j < n; ++j) y[j * step] = convert<T>(buf[j]);
  }
}

// An operand's element type pointer at an element offset.
template <class T>
inline T* at(const Operand& o, std::int64_t off) {
  return static_cast<T*>(o.data) + off;
}

// Calls f(off) for rows [b, e) of a, in order: off[k] is the element offset
// of row element 0 of operand k, advanced as an odometer.
template <class F>
void walk_rows(const IterArgs& a, std::int64_t b, std::int64_t e, const F& f) {
  const int last = a.ndim - 1;
  std::int64_t idx[kMaxDims] = {};
  std::int64_t off[kMaxOperands] = {};
  std::int64_t r = b;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = r % a.shape[d];
    r /= a.shape[d];
    for (int k = 0; k < a.nops; ++k) off[k] += idx[d] * a.op[k].strides[d];
  }
  for (std::int64_t row = b; row < e; ++row) {
    f(static_cast<const std::int64_t*>(off));
    for (int d = last - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < a.nops; ++k) off[k] += a.op[k].strides[d];
      if (idx[d] < a.shape[d]) break;
      for (int k = 0; k < a.nops; ++k) off[k] -= a.op[k].strides[d] * a.shape[d];
      idx[d] = 0;
    }
  }
}

inline std::int64_t row_count(const IterArgs& a) {
  std::int64_t rows = 1;
  for (int d = 0; d < a.ndim - 1; ++d) rows *= a.shape[d];
  return rows;
}

// Threads for `rows` rows of n elements: one below kParallelWork elements
// read (more than int64 holds when a broadcast row is long).
inline int row_threads(std::int64_t rows, std::int64_t n) {
  std::int64_t work = 0;
  if (__builtin_mul_overflow(rows, std::max<std::int64_t>(n, 1), &work)) work = INT64_MAX;
  return work < kParallelWork || rows == 1 ? 1 : omp_get_max_threads();
}

// Calls f(off, scratch) for every row: off[k] is the element offset of row
// element 0 of operand k; scratch points at `scratch_len` elements of S
// owned by the calling thread. `op` names the op in errors; f must not throw.
template <class S, class F>
void for_rows(const IterArgs& a, const char* op, std::int64_t scratch_len, const F& f) {
  const std::int64_t rows = row_count(a);
  if (rows == 0) return;
  const int threads = row_threads(rows, a.shape[a.ndim - 1]);
  std::vector<S> scratch = workspace<S>({scratch_len, threads}, op, "per-thread row scratch");
  auto run_range = [&](std::int64_t b, std::int64_t e, S* buf) {
    walk_rows(a, b, e, [&](const std::int64_t* off) { f(off, buf); });
  };
  if (threads == 1) {
    run_range(0, rows, scratch.data());
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const std::int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    run_range(rows * t / nt, rows * (t + 1) / nt, scratch.data() + t * scratch_len);
  }
}

// f(I{}) with I the C++ type of an index operand's dtype (i32 or i64).
template <class F>
decltype(auto) with_index_type(DType dt, const F& f) {
  if (dt == DType::i32) return f(std::int32_t{});
  return f(std::int64_t{});
}

// The first row, in the order for_rows walks them, whose integer operand k
// (I: i32 or i64; embedding's ids, cross_entropy's target) lies outside
// [0, limit) and is not *allowed (when given): its index, its value in
// *bad; -1 when every row is fine. Serial, outside any OpenMP region: the
// caller throws.
template <class I>
std::int64_t first_bad_id(const IterArgs& a, int k, std::int64_t limit, std::int64_t* bad,
                          const std::int64_t* allowed = nullptr) {
  const int last = a.ndim - 1;
  std::int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= a.shape[d];
  std::int64_t idx[kMaxDims] = {};
  std::int64_t off = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t id = *at<const I>(a.op[k], off);
    if ((id < 0 || id >= limit) && (allowed == nullptr || id != *allowed)) {
      *bad = id;
      return r;
    }
    for (int d = last - 1; d >= 0; --d) {
      ++idx[d];
      off += a.op[k].strides[d];
      if (idx[d] < a.shape[d]) break;
      off -= a.op[k].strides[d] * a.shape[d];
      idx[d] = 0;
    }
  }
  return -1;
}

// As for_rows, but the rows go in fixed chunks of `chunk` rows (the last
// one shorter), each chunk's rows in order on one thread: f(c, off,
// scratch) for every row of chunk c. The chunks depend on the shape only,
// so a result summed per chunk (a partial sum over rows) has the same bits
// whatever the number of threads.
template <class S, class F>
void for_row_chunks(const IterArgs& a, const char* op, std::int64_t chunk, std::int64_t scratch_len,
                    const F& f) {
  const std::int64_t rows = row_count(a);
  if (rows == 0) return;
  const std::int64_t chunks = (rows + chunk - 1) / chunk;
  const int threads =
      static_cast<int>(std::min<std::int64_t>(row_threads(rows, a.shape[a.ndim - 1]), chunks));
  std::vector<S> scratch = workspace<S>({scratch_len, threads}, op, "per-thread row scratch");
  auto run_chunk = [&](std::int64_t c, S* buf) {
    walk_rows(a, c * chunk, std::min(rows, (c + 1) * chunk),
              [&](const std::int64_t* off) { f(c, off, buf); });
  };
  if (threads == 1) {
    for (std::int64_t c = 0; c < chunks; ++c) run_chunk(c, scratch.data());
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c)
    run_chunk(c, scratch.data() + omp_get_thread_num() * scratch_len);
}

// A weight / bias row (the same for every row) converted once to the
// compute type C, or empty when absent.
template <class C, class T>
std::vector<C> param_row(const Operand& p, int last, std::int64_t n, const char* op) {
  std::vector<C> v;
  if (p.data == nullptr) return v;
  v = workspace<C>({n}, op, "the weight / bias row in the compute type");
  gather(static_cast<const T*>(p.data), p.strides[last], n, v.data());
  return v;
}

}  // namespace strata::cpu::rows
