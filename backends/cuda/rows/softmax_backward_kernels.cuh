#pragma once
// The kernels of softmax_backward (dx = y (g - sum(g y))) and
// log_softmax_backward (dx = g - exp(y) sum(g)) along the rows (op[0] = dx,
// op[1] = grad, op[2] = y; docs/guide/ops.md), one reduction per row, sums
// in f32 (f64 for f64):
//  * softmax_backward_kernel: any layout and dtype, on rows.cuh's engine (a
//    warp per row up to 1024 elements, a 256-thread block beyond; rows
//    longer than a tile re-read per pass);
//  * softmax_backward_fast: contiguous f32/f16/bf16 rows of up to 8192 f32
//    / 16384 16-bit elements, grad and y loaded once as raw 16-byte vectors
//    and widened on use (rows_fast.cuh's narrow geometry).
// dx may be grad: every element is read before it is written.
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_fast.cuh"
#include "cuda/rows/rows_fused.cuh"

namespace strata::cuda {
namespace {

template <bool Log, class T, int G>
__global__ void __launch_bounds__(kRowThreads) softmax_backward_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  const bool one_tile = p.n <= kTile;
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
    T* dx = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    const T* g = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    const T* y = reinterpret_cast<const T*>(p.ptr[2]) + off[2];
    C gv[kCap], yv[kCap];
    // Pass 1: sum(g y) (log_softmax: sum(g)).
    C s = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      load_tile<T, G>(g, p.row_stride[1], p.n, t0, lane, p.vec, gv);
      if (!Log) load_tile<T, G>(y, p.row_stride[2], p.n, t0, lane, p.vec, yv);
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        if (tile_elem<G, VEC>(t0, lane, k / VEC, k % VEC) < p.n) s += Log ? gv[k] : gv[k] * yv[k];
    }
    s = group_reduce<G>(s, SumOp{}, sh);
    // Pass 2: dx.
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (!one_tile) load_tile<T, G>(g, p.row_stride[1], p.n, t0, lane, p.vec, gv);
      if (Log || !one_tile) load_tile<T, G>(y, p.row_stride[2], p.n, t0, lane, p.vec, yv);
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        gv[k] = Log ? gv[k] - fn::m_exp(yv[k]) * s : yv[k] * (gv[k] - s);
      store_tile<T, G>(dx, p.row_stride[0], p.n, t0, lane, p.vec, gv);
    }
  });
}

template <bool Log, class T, int TPR, int NV>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, false>)
    softmax_backward_fast(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage,
      [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], const Vec<T, VEC>(&g)[NV]) {
        Vec<T, VEC> y[NV];
        fastrow::load_row<T, TPR, NV>(reinterpret_cast<const T*>(p.ptr[2]) + off[2], nvec, lane, y);
        // Zeros past the end add nothing.
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < NV; ++i)
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            s += Log ? fastrow::widen(g[i], j) : fastrow::widen(g[i], j) * fastrow::widen(y[i], j);
        s = red(s, SumOp{});
        T* dx = reinterpret_cast<T*>(p.ptr[0]) + off[0];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const std::int64_t e = lane + std::int64_t(i) * TPR;
          if (e < nvec) {
            Vec<T, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              const float gj = fastrow::widen(g[i], j), yj = fastrow::widen(y[i], j);
              o.v[j] = cvt<T>(Log ? gj - expf(yj) * s : yj * (gj - s));
            }
            st_vec<T, VEC>(dx + e * VEC, o);
          }
        }
      });
}

// ---- launchers --------------------------------------------------------------------
template <bool Log, class T>
void launch_softmax_backward(const RowParams& p, cudaStream_t st) {
  if constexpr (sizeof(T) != 8) {
    // The narrow geometry: two raw rows per thread (grad and y) fit the
    // registers of 16-bit rows at NV <= 2, where NV = 4 spills.
    const bool fast = fastrow::dispatch<T>(p, fastrow::Geometry::narrow, [&](auto tpr, auto nv) {
      constexpr int TPR = decltype(tpr)::value, NV = decltype(nv)::value;
      launch_row_kernel(softmax_backward_fast<Log, T, TPR, NV>, fastrow::grid_for<TPR>(p.rows),
                        fastrow::kBlock<TPR>, st, p);
    });
    if (fast) return;
  }
  launch_group_rows(&softmax_backward_kernel<Log, T, 32>,
                    &softmax_backward_kernel<Log, T, kRowThreads>, p, st);
}

}  // namespace
}  // namespace strata::cuda
