// cuda layer_norm (out, x, weight, bias; scalar[0] = eps; biased variance)
// and rms_norm (out, x, weight; scalar[0] = eps) on f32, f64, f16, bf16:
// statistics in f32 (f64 for f64) over two passes (mean, then the squared
// deviations from it), the row kept in registers when it fits a tile.
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"

namespace strata::cuda {
namespace {

template <bool RMS, class T, int G>
__global__ void __launch_bounds__(kRowThreads) norm_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  const int lane = threadIdx.x % G;
  const int rpb = kRowThreads / G;
  const bool one_tile = p.n <= kTile;
  const C eps = static_cast<C>(p.scalar[0]);
  const T* w = reinterpret_cast<const T*>(p.ptr[2]);
  const T* b = RMS ? nullptr : reinterpret_cast<const T*>(p.ptr[3]);
  for (std::int64_t row = std::int64_t(blockIdx.x) * rpb + threadIdx.x / G; row < p.rows;
       row += std::int64_t(gridDim.x) * rpb) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    C v[kCap];
    auto valid = [&](std::int64_t t0, int k) {
      return tile_elem<G, VEC>(t0, lane, k / VEC, k % VEC) < p.n;
    };
    // Pass 1: the mean (layer_norm only).
    C mu = 0;
    if constexpr (!RMS) {
      C s = 0;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int k = 0; k < kCap; ++k)
          if (valid(t0, k)) s += v[k];
      }
      mu = group_reduce<G>(s, SumOp{}, sh) / C(p.n);
    }
    // Pass 2: mean of squared deviations (of squares for rms_norm).
    C q = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (RMS || !one_tile) load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        if (valid(t0, k)) {
          const C c = v[k] - mu;
          q += c * c;
        }
    }
    q = group_reduce<G>(q, SumOp{}, sh);
    const C inv = C(1) / fn::m_sqrt(q / C(p.n) + eps);
    // Pass 3: the output.
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (!one_tile) load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
      C y[kCap];
#pragma unroll
      for (int k = 0; k < kCap; ++k) y[k] = (v[k] - mu) * inv;
      if (w != nullptr) {
        C t[kCap];
        load_tile<T, G>(w + off[2], p.rstride[2], p.n, t0, lane, p.vec, t);
#pragma unroll
        for (int k = 0; k < kCap; ++k) y[k] *= t[k];
      }
      if (b != nullptr) {
        C t[kCap];
        load_tile<T, G>(b + off[3], p.rstride[3], p.n, t0, lane, p.vec, t);
#pragma unroll
        for (int k = 0; k < kCap; ++k) y[k] += t[k];
      }
      store_tile<T, G>(out, p.rstride[0], p.n, t0, lane, p.vec, y);
    }
  }
}

template <bool RMS, class T>
void norm(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0 || p.n == 0) return;
  p.vec = rows_vectorisable(a, RMS ? 0b111 : 0b1111, 16 / sizeof(T), sizeof(T));
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  if (p.n <= 32 * kCap)
    norm_kernel<RMS, T, 32><<<row_grid(p.rows, kRowThreads / 32), kRowThreads, 0, st>>>(p);
  else
    norm_kernel<RMS, T, kRowThreads><<<row_grid(p.rows, 1), kRowThreads, 0, st>>>(p);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void add_all(std::vector<EwEntry>& v, DType dt) {
  v.push_back({"layer_norm", dt, &norm<false, T>});
  v.push_back({"rms_norm", dt, &norm<true, T>});
}

}  // namespace

std::vector<EwEntry> row_norm_entries() {
  std::vector<EwEntry> v;
  add_all<float>(v, DType::f32);
  add_all<double>(v, DType::f64);
  add_all<__half>(v, DType::f16);
  add_all<__nv_bfloat16>(v, DType::bf16);
  return v;
}

}  // namespace strata::cuda
