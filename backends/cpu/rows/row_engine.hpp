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
#include <cstdint>
#include <limits>
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

// Calls f(off, scratch) for every row: off[k] is the element offset of row
// element 0 of operand k; scratch points at `scratch_len` elements of S
// owned by the calling thread. `op` names the op in errors; f must not throw.
template <class S, class F>
void for_rows(const IterArgs& a, const char* op, std::int64_t scratch_len, const F& f) {
  const int last = a.ndim - 1;
  std::int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= a.shape[d];
  if (rows == 0) return;
  // Elements read: more than int64 holds when a broadcast row is long.
  std::int64_t work = 0;
  if (__builtin_mul_overflow(rows, std::max<std::int64_t>(a.shape[last], 1), &work))
    work = INT64_MAX;
  const int threads = work < kParallelWork || rows == 1 ? 1 : omp_get_max_threads();
  std::vector<S> scratch = workspace<S>({scratch_len, threads}, op, "per-thread row scratch");

  auto run_range = [&](std::int64_t b, std::int64_t e, S* buf) {
    std::int64_t idx[kMaxDims] = {};
    std::int64_t off[kMaxOperands] = {};
    std::int64_t r = b;
    for (int d = last - 1; d >= 0; --d) {
      idx[d] = r % a.shape[d];
      r /= a.shape[d];
      for (int k = 0; k < a.nops; ++k) off[k] += idx[d] * a.op[k].strides[d];
    }
    for (std::int64_t row = b; row < e; ++row) {
      f(static_cast<const std::int64_t*>(off), buf);
      for (int d = last - 1; d >= 0; --d) {
        ++idx[d];
        for (int k = 0; k < a.nops; ++k) off[k] += a.op[k].strides[d];
        if (idx[d] < a.shape[d]) break;
        for (int k = 0; k < a.nops; ++k) off[k] -= a.op[k].strides[d] * a.shape[d];
        idx[d] = 0;
      }
    }
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

}  // namespace strata::cpu::rows
