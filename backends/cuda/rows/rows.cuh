#pragma once
// The cuda row kernels' shared machinery (docs/guide/ops.md, "Row ops"): a row
// is the last dim of an IterArgs with row == true; a group of G threads (a
// warp for rows of up to 1024 elements, a 256-thread block beyond) owns one
// row at a time. The row is walked in tiles of G * kCap elements: thread
// `lane` holds elements (lane + i*G)*VEC + j of a tile (i < kCap/VEC, j <
// VEC) in registers, loaded as one 16-byte vector per i when every walked
// operand's row is unit-stride, 16-byte aligned and a multiple of VEC long,
// else element by element through the strides. Rows of up to G * kCap
// elements (8192 for a block) are read once and kept in registers between
// the statistics pass and the output pass; longer rows are re-read per pass.
// Reductions combine per-thread partials with xor shuffles, then across the
// block's warps through shared memory. All row offsets are 64-bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/elementwise/engine.cuh"
#include "cuda/pdl_launch.cuh"
#include "strata/iter_args.hpp"

namespace strata::cuda {

inline constexpr int kRowThreads = 256;
inline constexpr int kCap = 32;  // elements per thread per tile

// A row op's kernel argument: `rows` rows of `n` elements (the last dim),
// the outer dims innermost first; per operand its strides along them and
// its step along the row.
struct RowParams {
  int outer_dims;
  std::int64_t rows, n;
  std::int64_t outer_shape[kMaxDims];
  std::int64_t outer_strides[kMaxOperands][kMaxDims];
  std::int64_t row_stride[kMaxOperands];
  char* ptr[kMaxOperands];
  int operand_count;
  bool vec;  // every walked operand: unit-stride rows, 16-byte aligned, n % VEC == 0
  double scalar[2];
  std::int64_t iparam[2];
};

inline RowParams make_row_params(const IterArgs& a) {
  RowParams p{};
  const int last = a.ndim - 1;
  p.outer_dims = last;
  p.rows = 1;
  for (int d = 0; d < last; ++d) p.rows *= a.shape[d];
  p.n = a.shape[last];
  p.operand_count = a.nops;
  for (int j = 0; j < last; ++j) p.outer_shape[j] = a.shape[last - 1 - j];
  for (int k = 0; k < a.nops; ++k) {
    p.ptr[k] = static_cast<char*>(a.op[k].data);
    p.row_stride[k] = a.op[k].strides[last];
    for (int j = 0; j < last; ++j) p.outer_strides[k][j] = a.op[k].strides[last - 1 - j];
  }
  p.scalar[0] = a.scalar[0];
  p.scalar[1] = a.scalar[1];
  p.iparam[0] = a.iparam[0];
  p.iparam[1] = a.iparam[1];
  return p;
}

// True when operands `walked` (a bit mask; absent ones skipped) can take
// VEC-wide vector loads along every row.
inline bool rows_vectorisable(const IterArgs& a, unsigned walked, int vec, std::size_t itemsz) {
  const int last = a.ndim - 1;
  if (a.shape[last] % vec != 0) return false;
  for (int k = 0; k < a.nops; ++k) {
    if (!(walked >> k & 1) || a.op[k].data == nullptr) continue;
    if (a.op[k].strides[last] != 1) return false;
    if (reinterpret_cast<std::uintptr_t>(a.op[k].data) % (itemsz * vec) != 0) return false;
    for (int d = 0; d < last; ++d)
      if (a.op[k].strides[d] % vec != 0) return false;
  }
  return true;
}

// make_row_params, with p.vec set for elements of T when the operands
// `walked` (a bit mask) take 16-byte vectors along every row.
template <class T>
RowParams make_row_params(const IterArgs& a, unsigned walked) {
  RowParams p = make_row_params(a);
  p.vec = rows_vectorisable(a, walked, 16 / sizeof(T), sizeof(T));
  return p;
}

__device__ __forceinline__ void row_offsets(const RowParams& p, std::int64_t row,
                                            std::int64_t (&off)[kMaxOperands]) {
  if (p.outer_dims == 1) {  // [rows, n]: no 64-bit division per row
#pragma unroll
    for (int k = 0; k < kMaxOperands; ++k) off[k] = row * p.outer_strides[k][0];
    return;
  }
#pragma unroll
  for (int k = 0; k < kMaxOperands; ++k) off[k] = 0;
  for (int j = 0; j < p.outer_dims; ++j) {
    const std::int64_t q = row / p.outer_shape[j];
    const std::int64_t r = row - q * p.outer_shape[j];
#pragma unroll
    for (int k = 0; k < kMaxOperands; ++k) off[k] += r * p.outer_strides[k][j];
    row = q;
  }
}

// Each operand's offset to the start of one row (row_offsets).
using RowOffsets = std::int64_t[kMaxOperands];

// The loop every general row kernel runs: it waits for the previous kernel
// (launched with PDL: nothing is read before this), lets the next one start,
// then calls body(lane, off) for each row that this thread's group of G
// threads owns (kRowThreads / G groups a block, the grid striding over the
// rows); lane is the thread's place in its group, off the row's offsets.
template <int G, class Body>
__device__ __forceinline__ void for_group_rows(const RowParams& p, Body&& body) {
  grid_dependency_wait();
  allow_dependents();
  const int lane = threadIdx.x % G;
  const int rpb = kRowThreads / G;
  for (std::int64_t row = std::int64_t(blockIdx.x) * rpb + threadIdx.x / G; row < p.rows;
       row += std::int64_t(gridDim.x) * rpb) {
    RowOffsets off;
    row_offsets(p, row, off);
    body(lane, off);
  }
}

// Element index of slot (i, j) of a tile starting at t0.
template <int G, int VEC>
__device__ __forceinline__ std::int64_t tile_elem(std::int64_t t0, int lane, int i, int j) {
  return t0 + (std::int64_t(lane) + std::int64_t(i) * G) * VEC + j;
}

// Walks this thread's slots of the tile at t0 that lie in the row (load_tile
// and store_tile): vec_op(i, e0) for each 16-byte vector i (elements e0 ..
// e0 + VEC - 1) when `vec`, else one_op(k, e) for each element e, slot k.
template <class T, int G, class Vf, class Ef>
__device__ __forceinline__ void walk_tile(std::int64_t n, std::int64_t t0, int lane, bool vec,
                                          Vf&& vec_op, Ef&& one_op) {
  constexpr int VEC = 16 / sizeof(T);
#pragma unroll
  for (int i = 0; i < kCap / VEC; ++i) {
    const std::int64_t e0 = tile_elem<G, VEC>(t0, lane, i, 0);
    if (vec) {
      if (e0 < n) vec_op(i, e0);
    } else {
#pragma unroll
      for (int j = 0; j < VEC; ++j)
        if (e0 + j < n) one_op(i * VEC + j, e0 + j);
    }
  }
}

template <class T, int G, class C>
__device__ __forceinline__ void load_tile(const T* base, std::int64_t rs, std::int64_t n,
                                          std::int64_t t0, int lane, bool vec, C (&v)[kCap]) {
  constexpr int VEC = 16 / sizeof(T);
  walk_tile<T, G>(
      n, t0, lane, vec,
      [&](int i, std::int64_t e0) {
        const Vec<T, VEC> x = ld_vec<T, VEC>(base + e0);
#pragma unroll
        for (int j = 0; j < VEC; ++j) v[i * VEC + j] = cvt<C>(x.v[j]);
      },
      [&](int k, std::int64_t e) { v[k] = cvt<C>(base[e * rs]); });
}

template <class T, int G, class C>
__device__ __forceinline__ void store_tile(T* base, std::int64_t rs, std::int64_t n,
                                           std::int64_t t0, int lane, bool vec,
                                           const C (&v)[kCap]) {
  constexpr int VEC = 16 / sizeof(T);
  walk_tile<T, G>(
      n, t0, lane, vec,
      [&](int i, std::int64_t e0) {
        Vec<T, VEC> x;
#pragma unroll
        for (int j = 0; j < VEC; ++j) x.v[j] = cvt<T>(v[i * VEC + j]);
        st_vec<T, VEC>(base + e0, x);
      },
      [&](int k, std::int64_t e) { base[e * rs] = cvt<T>(v[k]); });
}

struct SumOp {
  template <class C>
  __device__ __forceinline__ C operator()(C a, C b) const {
    return a + b;
  }
};
// The larger, NaN ignored (softmax's shift; a NaN still reaches its sum).
struct MaxOp {
  template <class C>
  __device__ __forceinline__ C operator()(C a, C b) const {
    return b > a ? b : a;
  }
};

// Reduces v over the G threads of a group (G == 32: the warp; else the whole
// block, which must be exactly one group). sh holds G / 32 values.
template <int G, class C, class Op>
__device__ __forceinline__ C group_reduce(C v, Op op, C* sh) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if constexpr (G > 32) {
    const int w = threadIdx.x / 32;
    __syncthreads();  // the previous reduction's readers are done
    if (threadIdx.x % 32 == 0) sh[w] = v;
    __syncthreads();
    v = sh[0];
#pragma unroll
    for (int k = 1; k < G / 32; ++k) v = op(v, sh[k]);
  }
  return v;
}

// Launches a row kernel with programmatic dependent launch (pdl_launch.cuh):
// in a stream or a CUDA graph it is scheduled while the previous kernel
// drains; every row kernel calls grid_dependency_wait() before touching
// global memory and allow_dependents() right after.
template <class... Params, class... Args>
void launch_row_kernel(void (*kernel)(Params...), dim3 grid, int block, cudaStream_t st,
                       Args... args) {
  CUDA_CHECK(launch_pdl(kernel, grid, block, 0, st, args...));
}

inline int row_grid(std::int64_t rows, int rows_per_block) {
  const std::int64_t want = (rows + rows_per_block - 1) / rows_per_block;
  const std::int64_t cap = std::int64_t(sm_count()) * 32;
  return static_cast<int>(want < 1 ? 1 : (want < cap ? want : cap));
}

// Launches a general row kernel: `per_warp` (G = 32: a warp per row) for
// rows that fit one warp's tile, else `per_block` (G = kRowThreads).
template <class K>
void launch_group_rows(K per_warp, K per_block, const RowParams& p, cudaStream_t st) {
  if (p.n <= 32 * kCap)
    launch_row_kernel(per_warp, row_grid(p.rows, kRowThreads / 32), kRowThreads, st, p);
  else
    launch_row_kernel(per_block, row_grid(p.rows, 1), kRowThreads, st, p);
}

}  // namespace strata::cuda
