#pragma once
// Internal to the cpu matmul (matmul_cpu.cpp): Eigen's GEMM on strided
// matrices and how a product is spread over threads.
//
// Threads. Eigen's GEMM uses OpenMP when compiled with it (EIGEN_HAS_OPENMP
// follows -fopenmp, which the strata target has), and runs single-threaded
// inside an OpenMP parallel region; its matrix-vector product is never
// threaded. So: many small matrices (or at least one per thread) are spread
// over the batch with one OpenMP loop, each GEMM on one thread; otherwise
// the batch runs in order, a skinny product (M <= 16: decode) is cut into
// one column slice per thread (each slice one matrix-vector product per
// row, over cache-sized column blocks), and a larger GEMM into a grid of
// tiles, one single-threaded Eigen GEMM each.
//
// Every allocation of ours happens before any parallel region
// (cpu/workspace.hpp: a strata::Error naming the bytes when it cannot be
// had), and each region catches what its body throws and rethrows it after
// the region. Eigen never threads a product itself: it would allocate its
// packing buffers inside its own region (gemm_tiles says how).
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <exception>

#include "cpu/threads.hpp"
#include "cpu/workspace.hpp"
#include "strata/tuning.hpp"

namespace strata::cpu::gemm {

using Index = std::int64_t;

enum class Kind { row, col, copy };
struct Lay {
  Kind kind;
  Index ld;  // outer stride
};

// How Eigen can read (or write) a [rows, cols] matrix with strides rs, cs.
// A size-1 dim's stride is irrelevant and ignored.
Lay classify(Index rows, Index cols, Index rs, Index cs) {
  if ((cols == 1 || cs == 1) && (rows == 1 || rs >= cols))
    return {Kind::row, rows == 1 ? cols : rs};
  if ((rows == 1 || rs == 1) && (cols == 1 || cs >= rows))
    return {Kind::col, cols == 1 ? rows : cs};
  return {Kind::copy, cols};
}

template <class C, int Order>
using CMap = Eigen::Map<const Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Order>,
                        Eigen::Unaligned, Eigen::OuterStride<>>;
template <class C, int Order>
using MMap = Eigen::Map<Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Order>, Eigen::Unaligned,
                        Eigen::OuterStride<>>;

template <class C, int OA, int OB, int OC>
void gemm_impl(const C* pa, Index lda, const C* pb, Index ldb, C* pc, Index ldc, Index M, Index N,
               Index K, bool accumulate) {
  const CMap<C, OA> A(pa, M, K, Eigen::OuterStride<>(lda));
  const CMap<C, OB> B(pb, K, N, Eigen::OuterStride<>(ldb));
  MMap<C, OC> Cm(pc, M, N, Eigen::OuterStride<>(ldc));
  if (accumulate)
    Cm.noalias() += A * B;
  else
    Cm.noalias() = A * B;
}

constexpr int R = Eigen::RowMajor, Cl = Eigen::ColMajor;

template <class C, int OA, int OB>
void gemm_c(const C* pa, Index lda, const C* pb, Index ldb, C* pc, Lay lc, Index M, Index N,
            Index K, bool acc) {
  if (lc.kind == Kind::row)
    gemm_impl<C, OA, OB, R>(pa, lda, pb, ldb, pc, lc.ld, M, N, K, acc);
  else
    gemm_impl<C, OA, OB, Cl>(pa, lda, pb, ldb, pc, lc.ld, M, N, K, acc);
}

template <class C>
void gemm(const C* pa, Lay la, const C* pb, Lay lb, C* pc, Lay lc, Index M, Index N, Index K,
          bool acc) {
  const bool ar = la.kind == Kind::row, brw = lb.kind == Kind::row;
  if (ar && brw)
    gemm_c<C, R, R>(pa, la.ld, pb, lb.ld, pc, lc, M, N, K, acc);
  else if (ar)
    gemm_c<C, R, Cl>(pa, la.ld, pb, lb.ld, pc, lc, M, N, K, acc);
  else if (brw)
    gemm_c<C, Cl, R>(pa, la.ld, pb, lb.ld, pc, lc, M, N, K, acc);
  else
    gemm_c<C, Cl, Cl>(pa, la.ld, pb, lb.ld, pc, lc, M, N, K, acc);
}

// The skinny product (decode: M = 1 .. kSkinnyRows rows against a large
// weight). Two things go wrong with Eigen alone. Its matrix-vector product
// runs on one thread, which then streams the whole weight at one core's
// bandwidth; so the N output columns are cut into one slice per thread.
// And its GEMM repacks all of b on every call, which for a few rows costs
// more than M matrix-vector products, in cache or not, while at 16 rows with
// b in L3 the GEMM wins (docs/log/ops.md). So up to kRowRows rows each slice runs one matrix-vector
// product per row of a over column blocks whose part of b (kBlockBytes)
// stays in the core's L2 cache for the rows after the first; above, Eigen's
// GEMM on the slice. Every piece is an Eigen product on the same maps moved along
// (a column offset of a row-major b or c, a leading-dimension step of a
// column-major one; rows likewise): no copy. Each slice is at least
// kMinSliceCols columns and min_slice_elems() elements of b, so that the
// region's start-up (a few microseconds) stays small against what a slice
// streams.
constexpr Index kSkinnyRows = 16;
constexpr Index kMinSliceCols = 16;
constexpr Index kDefaultSliceElems = Index(1) << 14;
// STRATA_CPU_SLICE_ELEMS overrides kDefaultSliceElems (tuning: the smallest
// slice, in elements of b, that one thread of a skinny product gets).
Index min_slice_elems() {
  static const Index v = tuning().cpu_slice_elems > 0 ? static_cast<Index>(tuning().cpu_slice_elems)
                                                      : kDefaultSliceElems;
  return v;
}
constexpr Index kBlockBytes = Index(128) << 10;
constexpr Index kRowRows = 8;

// Columns [n0, n0 + n) of c = a b (+ c when acc), M <= kSkinnyRows.
template <class C>
void skinny_cols(const C* pa, Lay la, const C* pb, Lay lb, C* pc, Lay lc, Index M, Index n0,
                 Index n, Index K, bool acc) {
  if (M > kRowRows) {
    gemm(pa, la, pb + (lb.kind == Kind::row ? n0 : n0 * lb.ld), lb,
         pc + (lc.kind == Kind::row ? n0 : n0 * lc.ld), lc, M, n, K, acc);
    return;
  }
  const Index fit = kBlockBytes / static_cast<Index>(sizeof(C)) / std::max<Index>(K, 1);
  const Index block = M == 1 ? n : std::max(kMinSliceCols, fit / kMinSliceCols * kMinSliceCols);
  for (Index j0 = n0; j0 < n0 + n; j0 += block) {
    const Index nb = std::min(block, n0 + n - j0);
    const C* b = pb + (lb.kind == Kind::row ? j0 : j0 * lb.ld);
    C* c = pc + (lc.kind == Kind::row ? j0 : j0 * lc.ld);
    for (Index m = 0; m < M; ++m)
      gemm(pa + (la.kind == Kind::row ? m * la.ld : m), la, b, lb,
           c + (lc.kind == Kind::row ? m * lc.ld : m), lc, 1, nb, K, acc);
  }
}

// Eigen's own threshold: it threads a product only from two tasks of this
// many multiply-adds (Eigen/src/Core/products/Parallelizer.h).
constexpr double kEigenTaskWork = 50000;

// A larger product on our own team: c cut into a grid of tm x tn tiles, one
// Eigen GEMM per tile. Eigen runs single-threaded inside a region whose team
// has more than one thread, so the blocking buffers it allocates per call
// are allocated here, where a bad_alloc is caught and rethrown after the
// region; Eigen's own threaded GEMM allocates inside its region, out of
// reach. The grid has at most one tile per thread and as many as Eigen
// would use threads (one per kEigenTaskWork), and of those grids the one
// with the smallest tile rows + columns: each tile packs its rows of a and
// its columns of b, so that is the packing it repeats. It prefills at least
// as fast as Eigen's own threads (docs/log/models.md, "CPU").
template <class C>
void gemm_tiles(const C* pa, Lay la, const C* pb, Lay lb, C* pc, Lay lc, Index M, Index N, Index K,
                bool acc, Index tiles) {
  auto up = [](Index x, Index m) { return (x + m - 1) / m * m; };
  Index tm = 1, tn = 1, best = -1, cost = 0;
  for (Index r = 1; r <= tiles; ++r) {
    const Index c = tiles / r;
    const Index rows = up((M + r - 1) / r, 8), cols = up((N + c - 1) / c, kMinSliceCols);
    const Index n = ((M + rows - 1) / rows) * ((N + cols - 1) / cols);
    if (n > best || (n == best && rows + cols < cost)) {
      best = n;
      cost = rows + cols;
      tm = rows;
      tn = cols;
    }
  }
  const Index gr = (M + tm - 1) / tm, gc = (N + tn - 1) / tn;
  std::exception_ptr err;
#pragma omp parallel for schedule(static) num_threads(std::max(2, region_team(gr* gc)))
  for (Index t = 0; t < gr * gc; ++t) {
    try {
      const Index m0 = (t / gc) * tm, n0 = (t % gc) * tn;
      const C* a = pa + (la.kind == Kind::row ? m0 * la.ld : m0);
      const C* b = pb + (lb.kind == Kind::row ? n0 : n0 * lb.ld);
      C* c = pc + (lc.kind == Kind::row ? m0 * lc.ld + n0 : m0 + n0 * lc.ld);
      gemm(a, la, b, lb, c, lc, std::min(tm, M - m0), std::min(tn, N - n0), K, acc);
    } catch (...) {
#pragma omp critical(strata_matmul_err)
      if (!err) err = std::current_exception();
    }
  }
  if (err) rethrow_after_region(err, "matmul");
}

// c = a b (+ c when acc), threaded: a skinny product as above (one slice
// inside a parallel region, where the batch loop already spreads the
// work); a larger one in tiles over the team; inside a region, or when
// too small for two threads, one GEMM on this thread.
template <class C>
void gemm_threaded(const C* pa, Lay la, const C* pb, Lay lb, C* pc, Lay lc, Index M, Index N,
                   Index K, bool acc) {
  const Index min_slice = min_slice_elems();
  if (M > kSkinnyRows || N * K < min_slice) {
    const double work = double(M) * double(N) * double(K);
    const Index tiles =
        std::min<Index>(omp_get_max_threads(), static_cast<Index>(work / kEigenTaskWork));
    if (omp_in_parallel() || tiles < 2)
      gemm(pa, la, pb, lb, pc, lc, M, N, K, acc);
    else
      gemm_tiles(pa, la, pb, lb, pc, lc, M, N, K, acc, tiles);
    return;
  }
  const Index threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const Index slices =
      std::max<Index>(1, std::min({threads, N / kMinSliceCols, (N * K) / min_slice}));
  if (slices == 1) {
    skinny_cols(pa, la, pb, lb, pc, lc, M, 0, N, K, acc);
    return;
  }
  // Slice boundaries on multiples of kMinSliceCols keep a row-major slice's
  // start on a cache line when the matrix's is.
  const Index per = (N + slices - 1) / slices;
  const Index step = (per + kMinSliceCols - 1) / kMinSliceCols * kMinSliceCols;
  const Index count = (N + step - 1) / step;
  const int team = region_team(count);  // threads past `count` get no slice
  std::exception_ptr err;
#pragma omp parallel for schedule(static) num_threads(team)
  for (Index s = 0; s < count; ++s) {
    try {
      const Index n0 = s * step;
      skinny_cols(pa, la, pb, lb, pc, lc, M, n0, std::min(step, N - n0), K, acc);
    } catch (...) {
#pragma omp critical(strata_matmul_err)
      if (!err) err = std::current_exception();
    }
  }
  if (err) rethrow_after_region(err, "matmul");
}

}  // namespace strata::cpu::gemm
