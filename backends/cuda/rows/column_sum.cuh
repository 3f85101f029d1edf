#pragma once
// sum and mean over a leading dim of a row-major tensor (a bias gradient:
// sum(g [N, C], 0); a broadcast gradient summed over the batch). The row
// machinery (rows.cuh) gives each reduced row to one group of threads; when
// the reduced dim is not unit-stride, a warp's load then touches 32
// different rows, and there are only as many groups as outputs. Here the
// threads run along the unit-stride outer dim instead ("columns"):
//  * column_partial_kernel: a block owns 32 * VEC columns (VEC = 16 bytes
//    of T) of one outer index and one segment of the reduced dim; each of
//    its warps reads every kWarps-th row of the segment across those
//    columns (one 16-byte vector per lane where aligned, else 32
//    consecutive elements per load), in order, kUnroll rows in flight; the
//    warps' sums are added in warp order through shared memory.
//  * with one segment that sum is the output; with S > 1 it goes to
//    stream-ordered scratch (f32, f64 for f64) and column_finish_kernel adds
//    the S partials of each output in segment order.
// The order of every addition is fixed by the shape and the device's SM
// count, so two runs give the same bits (no atomics).
#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/rows/rows.cuh"
#include "cuda/runtime/stream_scratch.hpp"

namespace strata::cuda {
namespace {

namespace colsum {

inline constexpr int kWarps = kRowThreads / 32;
inline constexpr int kUnroll = 4;                           // rows in flight per warp
inline constexpr std::int64_t kRowStep = kWarps * kUnroll;  // rows a block walks per step
inline constexpr std::int64_t kMinSegment = 2 * kRowStep;
inline constexpr int kBlocksPerSm = 16;  // the grid the segments aim at: a few waves

// The reduction as the column kernels see it: out[o, c] = sum over r < n of
// x[o, r, c], c < cols the unit-stride dim of x, o < outer the other outer
// dims (innermost first in outer_shape and the strides).
template <class C>
struct ColumnParams {
  const char* x;
  char* out;
  C* partial;  // [segments][outer * cols]; null: one segment, written to out
  std::int64_t n, cols, outer;
  std::int64_t x_row;    // x's stride along the reduced dim
  std::int64_t out_col;  // out's stride along the columns
  int outer_dims;
  std::int64_t outer_shape[kMaxDims];
  std::int64_t x_outer[kMaxDims], out_outer[kMaxDims];
  std::int64_t col_tiles;  // blocks along the columns per outer index
  std::int64_t segment;    // rows per segment (a multiple of kRowStep)
};

template <class C>
__device__ __forceinline__ void outer_offsets(const ColumnParams<C>& p, std::int64_t o,
                                              std::int64_t& xo, std::int64_t& oo) {
  xo = 0;
  oo = 0;
  for (int j = 0; j < p.outer_dims; ++j) {
    const std::int64_t q = o / p.outer_shape[j];
    const std::int64_t r = o - q * p.outer_shape[j];
    xo += r * p.x_outer[j];
    oo += r * p.out_outer[j];
    o = q;
  }
}

// Block (col_tiles * outer, segments): column tile t of outer index o, rows
// [y * segment, (y + 1) * segment) of the reduced dim. Lane `lane` holds
// columns lane * VEC + j of the tile with Vectors (x 16-byte aligned, cols
// and every x stride a multiple of VEC), else lane + 32 * j.
// With vectors, 64 registers (4 blocks an SM) hold it without spills; the
// element walk's 32 loads in flight need more.
template <class T, bool Mean, bool Vectors>
__global__ void __launch_bounds__(kRowThreads, Vectors ? 4 : 1)
    column_partial_kernel(ColumnParams<compute_t<T>> p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr int kTile = 32 * VEC;
  __shared__ C sh[kWarps][kTile];
  grid_dependency_wait();
  allow_dependents();
  const std::int64_t o = blockIdx.x / p.col_tiles;
  const std::int64_t c0 = (blockIdx.x - o * p.col_tiles) * kTile;
  std::int64_t xo, oo;
  outer_offsets(p, o, xo, oo);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t r0 = std::int64_t(blockIdx.y) * p.segment;
  const std::int64_t r1 = std::min(p.n, r0 + p.segment);
  const T* x = reinterpret_cast<const T*>(p.x) + xo + c0;
  C acc[VEC];
#pragma unroll
  for (int j = 0; j < VEC; ++j) acc[j] = C(0);
  if constexpr (Vectors) {
    // cols is a multiple of VEC: a lane's vector lies wholly inside or outside.
    const bool in = c0 + lane * VEC < p.cols;
    for (std::int64_t r = r0 + warp; r < r1; r += kRowStep) {
      Vec<T, VEC> v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (in && r + u * kWarps < r1)
          v[u] = ld_vec<T, VEC>(x + (r + u * kWarps) * p.x_row + lane * VEC);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (in && r + u * kWarps < r1)
#pragma unroll
          for (int j = 0; j < VEC; ++j) acc[j] += cvt<C>(v[u].v[j]);
    }
  } else {
    for (std::int64_t r = r0 + warp; r < r1; r += kRowStep) {
      T v[kUnroll][VEC];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (c0 + lane + 32 * j < p.cols && r + u * kWarps < r1)
            v[u][j] = x[(r + u * kWarps) * p.x_row + lane + 32 * j];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (c0 + lane + 32 * j < p.cols && r + u * kWarps < r1) acc[j] += cvt<C>(v[u][j]);
    }
  }
#pragma unroll
  for (int j = 0; j < VEC; ++j) sh[warp][Vectors ? lane * VEC + j : lane + 32 * j] = acc[j];
  __syncthreads();
  for (int t = threadIdx.x; t < kTile; t += kRowThreads) {
    const std::int64_t c = c0 + t;
    if (c >= p.cols) continue;
    C s = sh[0][t];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) s += sh[w][t];
    if (p.partial != nullptr) {
      p.partial[(std::int64_t(blockIdx.y) * p.outer + o) * p.cols + c] = s;
    } else {
      if (Mean) s = s / C(p.n);
      reinterpret_cast<T*>(p.out)[oo + c * p.out_col] = cvt<T>(s);
    }
  }
}

// A block per 32 consecutive outputs (outer-major): warp w adds segments
// w, w + kWarps, ... in order, then the warps' sums are added in warp order.
template <class T, bool Mean>
__global__ void __launch_bounds__(kRowThreads)
    column_finish_kernel(ColumnParams<compute_t<T>> p, std::int64_t segments) {
  using C = compute_t<T>;
  __shared__ C sh[kWarps][32];
  grid_dependency_wait();
  allow_dependents();
  const std::int64_t total = p.outer * p.cols;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t i0 = std::int64_t(blockIdx.x) * 32; i0 < total;
       i0 += std::int64_t(gridDim.x) * 32) {
    const std::int64_t i = i0 + lane;
    C s = C(0);
    if (i < total)
      for (std::int64_t k = warp; k < segments; k += kWarps) s += p.partial[k * total + i];
    __syncthreads();  // the previous pass's readers are done
    sh[warp][lane] = s;
    __syncthreads();
    if (warp == 0 && i < total) {
      s = sh[0][lane];
#pragma unroll
      for (int w = 1; w < kWarps; ++w) s += sh[w][lane];
      if (Mean) s = s / C(p.n);
      const std::int64_t o = i / p.cols;
      std::int64_t xo, oo;
      outer_offsets(p, o, xo, oo);
      reinterpret_cast<T*>(p.out)[oo + (i - o * p.cols) * p.out_col] = cvt<T>(s);
    }
  }
}

}  // namespace colsum

// Runs sum (mean when Mean) over the row of `a` (out op[0], x op[1]) on the
// column kernels when x's row is not unit-stride and its innermost outer dim
// is; false (nothing launched) for every other layout.
template <class T, bool Mean>
bool launch_column_sum(const IterArgs& a) {
  using namespace colsum;
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = 32 * VEC;
  const int m = a.ndim;
  if (m < 2 || a.shape[m - 1] <= 0) return false;
  const Operand &out = a.op[0], &x = a.op[1];
  if (x.strides[m - 2] != 1 || x.strides[m - 1] == 1) return false;
  ColumnParams<C> p{};
  p.x = static_cast<const char*>(x.data);
  p.out = static_cast<char*>(out.data);
  p.n = a.shape[m - 1];
  p.cols = a.shape[m - 2];
  p.x_row = x.strides[m - 1];
  p.out_col = out.strides[m - 2];
  p.outer_dims = m - 2;
  p.outer = 1;
  for (int j = 0; j < m - 2; ++j) {
    p.outer_shape[j] = a.shape[m - 3 - j];
    p.x_outer[j] = x.strides[m - 3 - j];
    p.out_outer[j] = out.strides[m - 3 - j];
    p.outer *= p.outer_shape[j];
  }
  if (p.outer * p.cols == 0) return true;  // nothing to write
  p.col_tiles = (p.cols + kTile - 1) / kTile;
  const std::int64_t tiles = p.col_tiles * p.outer;
  if (tiles > INT_MAX) return false;
  bool vec =
      p.cols % VEC == 0 && p.x_row % VEC == 0 && reinterpret_cast<std::uintptr_t>(x.data) % 16 == 0;
  for (int j = 0; j < p.outer_dims; ++j) vec = vec && p.x_outer[j] % VEC == 0;

  // Segments: enough blocks for kBlocksPerSm per SM, each at least
  // kMinSegment rows, at most 65535 of them (the grid's y limit).
  const std::int64_t want = std::int64_t(sm_count()) * kBlocksPerSm;
  const std::int64_t s0 = std::max<std::int64_t>(1, (want + tiles - 1) / tiles);
  std::int64_t seg = std::max<std::int64_t>(kMinSegment, (p.n + s0 - 1) / s0);
  seg = std::max<std::int64_t>(seg, (p.n + 65534) / 65535);
  seg = (seg + kRowStep - 1) / kRowStep * kRowStep;
  p.segment = seg;
  const std::int64_t segments = (p.n + seg - 1) / seg;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(segments));
  // Two instantiations: the element-wise walk's registers would otherwise
  // limit the vector walk's occupancy.
  auto partial = [&] {
    launch_row_kernel(
        vec ? &column_partial_kernel<T, Mean, true> : &column_partial_kernel<T, Mean, false>, grid,
        kRowThreads, st, p);
  };
  if (segments == 1) {
    partial();
    return true;
  }
  const std::int64_t total = p.outer * p.cols;
  const StreamScratch scratch(std::size_t(segments) * std::size_t(total) * sizeof(C), st);
  p.partial = scratch.at<C>(0);
  partial();
  const std::int64_t blocks =
      std::min<std::int64_t>((total + 31) / 32, std::int64_t(sm_count()) * 32);
  launch_row_kernel(&column_finish_kernel<T, Mean>, dim3(static_cast<unsigned>(blocks)),
                    kRowThreads, st, p, segments);
  return true;
}

}  // namespace
}  // namespace strata::cuda
