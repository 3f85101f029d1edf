#pragma once
// The kernels of layer_norm_backward and rms_norm_backward (op[0] = dx, null
// when not wanted; op[1] = grad; op[2] = x; op[3] = weight, null when
// absent; scalar[0] = eps; docs/guide/ops.md). Per row, in f32 (f64 for
// f64): the statistics of x again (mean, then the squared deviations from
// it; rms_norm: the mean square), a = mean(gh) and b = mean(gh xhat) with
// gh = grad * weight, then dx = rstd (gh - a - xhat b) (rms_norm: no a).
//
// dweight = sum over rows of grad * xhat and dbias = sum over rows of grad
// are summed without atomics: each unit (a block of the fast kernel, a
// group of the general one) adds its rows, always the same ones for a given
// shape and device, into a partial row of its own (`NormPartials`: kp rows
// of n per unit, kp = 2 for layer_norm, 1 for rms_norm), and
// norm_partials_sum adds the units' partials in a fixed order. The same bits
// run to run.
//  * norm_backward_kernel: any layout and dtype, on rows.cuh's engine (a
//    warp per row up to 1024 elements, a 256-thread block beyond); its
//    group's partial rows live in global memory (L2), read and written per
//    row by the thread that owns each element.
//  * norm_backward_fast: contiguous f32/f16/bf16 rows of up to 8192
//    elements over one outer dim (the rows of a [rows, n] view), NV 16-byte vectors per thread (a
//    row of TPR threads, kNormBlock / TPR rows per block at a time), grad and x read once, the
//    weight held in registers for every row, the partial sums in registers;
//    at the end the block's rows add theirs through shared memory, in group
//    order, and the block writes one partial row.
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_fast.cuh"
#include "cuda/rows/rows_fused.cuh"

namespace strata::cuda {
namespace {

struct NormPartials {
  void* data;  // [units][kp][n] of the compute type; null: no dweight, no dbias
  int kp;
};

template <bool RMS, class T, int G>
__global__ void __launch_bounds__(kRowThreads)
    norm_backward_kernel(RowParams p, NormPartials part) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % G;
  const int rpb = kRowThreads / G;
  const bool one_tile = p.n <= kTile;
  const C eps = static_cast<C>(p.scalar[0]), inv_n = C(1) / C(p.n);
  T* const dxp = reinterpret_cast<T*>(p.ptr[0]);
  const T* const w = reinterpret_cast<const T*>(p.ptr[3]);
  auto elem = [&](std::int64_t t0, int k) { return tile_elem<G, VEC>(t0, lane, k / VEC, k % VEC); };
  // This group's partial rows, zeroed first. Each element is only ever
  // touched by the thread that owns it, so no barrier is needed.
  C* const pw = part.data == nullptr
                    ? nullptr
                    : static_cast<C*>(part.data) +
                          (std::int64_t(blockIdx.x) * rpb + threadIdx.x / G) * part.kp * p.n;
  C* const pb = RMS || pw == nullptr ? nullptr : pw + p.n;
  if (pw != nullptr)
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile)
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        if (elem(t0, k) < p.n) {
          pw[elem(t0, k)] = C(0);
          if (pb != nullptr) pb[elem(t0, k)] = C(0);
        }
  for (std::int64_t row = std::int64_t(blockIdx.x) * rpb + threadIdx.x / G; row < p.rows;
       row += std::int64_t(gridDim.x) * rpb) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[2]) + off[2];
    const T* g = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    C xv[kCap], gv[kCap];
    // The weight, read per element (cached) rather than held as a tile; 1
    // without one (g * 1 is g exactly).
    auto wt = [&](std::int64_t e) {
      return w != nullptr ? cvt<C>(w[off[3] + e * p.row_stride[3]]) : C(1);
    };
    // Pass 1: the mean (layer_norm only).
    C mu = 0;
    if constexpr (!RMS) {
      C s = 0;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.row_stride[2], p.n, t0, lane, p.vec, xv);
#pragma unroll
        for (int k = 0; k < kCap; ++k)
          if (elem(t0, k) < p.n) s += xv[k];
      }
      mu = group_reduce<G>(s, SumOp{}, sh) * inv_n;
    }
    // Pass 2: mean of squared deviations (of squares for rms_norm).
    C q = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (RMS || !one_tile) load_tile<T, G>(x, p.row_stride[2], p.n, t0, lane, p.vec, xv);
#pragma unroll
      for (int k = 0; k < kCap; ++k)
        if (elem(t0, k) < p.n) {
          const C c = xv[k] - mu;
          q += c * c;
        }
    }
    const C rstd = C(1) / fn::m_sqrt(group_reduce<G>(q, SumOp{}, sh) * inv_n + eps);
    // Pass 3: a = sum(gh), b = sum(gh (x - mu)); the partial sums.
    C a = 0, b = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (!one_tile) load_tile<T, G>(x, p.row_stride[2], p.n, t0, lane, p.vec, xv);
      load_tile<T, G>(g, p.row_stride[1], p.n, t0, lane, p.vec, gv);
#pragma unroll
      for (int k = 0; k < kCap; ++k) {
        const std::int64_t e = elem(t0, k);
        if (e < p.n) {
          const C xc = xv[k] - mu, h = gv[k] * wt(e);
          a += h;
          b += h * xc;
          if (pw != nullptr) pw[e] += gv[k] * xc * rstd;
          if (pb != nullptr) pb[e] += gv[k];
        }
      }
    }
    a = RMS ? C(0) : group_reduce<G>(a, SumOp{}, sh) * inv_n;
    // dx = rstd (gh - a - xhat mean(gh xhat)), xhat = (x - mu) rstd and
    // mean(gh xhat) = rstd b / n: rstd (gh - a) - (x - mu) rb.
    const C rb = group_reduce<G>(b, SumOp{}, sh) * inv_n * rstd * rstd * rstd;
    if (dxp == nullptr) continue;
    // Pass 4: dx = rstd (gh - a) - (x - mu) rb.
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (!one_tile) {
        load_tile<T, G>(x, p.row_stride[2], p.n, t0, lane, p.vec, xv);
        load_tile<T, G>(g, p.row_stride[1], p.n, t0, lane, p.vec, gv);
      }
#pragma unroll
      for (int k = 0; k < kCap; ++k) {
        const std::int64_t e = elem(t0, k);
        if (e < p.n) gv[k] = rstd * (gv[k] * wt(e) - a) - (xv[k] - mu) * rb;
      }
      store_tile<T, G>(dxp + off[0], p.row_stride[0], p.n, t0, lane, p.vec, gv);
    }
  }
}

// ---- the fast kernel --------------------------------------------------------------
inline constexpr int kNormBlock = 1024;  // threads per block: kNormBlock / TPR rows at a time

// Sums M floats over each group of TPR threads of the block (every thread
// of the group gets the sums): xor shuffles, then across the group's warps
// through shared memory, in warp order. Two alternating buffers, so that
// one barrier per reduction suffices. Every thread of the block must call
// it the same number of times (it has a block barrier when TPR > 32).
template <int TPR>
struct GroupSum {
  static constexpr int kWarps = kNormBlock / 32;
  float* sh;  // 2 * kWarps * 3 floats
  int k = 0;
  template <int M>
  __device__ __forceinline__ void operator()(float (&v)[M]) {
    static_assert(M <= 3);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
      for (int m = 0; m < M; ++m) v[m] += __shfl_xor_sync(0xffffffffu, v[m], o);
    if constexpr (TPR > 32) {
      float* b = sh + (k & 1) * kWarps * 3;
      ++k;
      const int warp = threadIdx.x / 32, first = threadIdx.x / TPR * (TPR / 32);
      if (threadIdx.x % 32 == 0)
#pragma unroll
        for (int m = 0; m < M; ++m) b[warp * 3 + m] = v[m];
      __syncthreads();
#pragma unroll
      for (int m = 0; m < M; ++m) {
        float s = b[first * 3 + m];
#pragma unroll
        for (int i = 1; i < TPR / 32; ++i) s += b[(first + i) * 3 + m];
        v[m] = s;
      }
    }
  }
};

// PARAMS: dweight or dbias wanted (part.data set).
template <bool RMS, class T, int TPR, int NV, bool PARAMS>
__global__ void __launch_bounds__(kNormBlock, 1)
    norm_backward_fast(RowParams p, NormPartials part) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int RPB = kNormBlock / TPR;
  constexpr int E = NV * VEC;  // elements of a row per thread
  // PIPE: the staged row in its slots (grad and x: 32 B per vector per
  // thread); the block's partial sums go through the same memory (comb)
  // once every row is done.
  constexpr bool PIPE = NV == 1;
  constexpr int kStageBytes = PIPE ? 2 * NV * kNormBlock * 16 : 16;
  constexpr int kCombBytes = PARAMS && RPB > 1 ? kNormBlock * E * 4 : 4;
  __shared__ float red_sh[2 * (kNormBlock / 32) * 3];
  __shared__ __align__(16) unsigned char smem[kStageBytes > kCombBytes ? kStageBytes : kCombBytes];
  float* const comb = reinterpret_cast<float*>(smem);
  GroupSum<TPR> red{red_sh};
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % TPR, grp = threadIdx.x / TPR;
  const std::int64_t nvec = p.n / VEC;
  const float eps = static_cast<float>(p.scalar[0]), inv_n = 1.0f / static_cast<float>(p.n);
  const T* const w = reinterpret_cast<const T*>(p.ptr[3]);  // stride 0 over rows: offset 0
  T* const dxp = reinterpret_cast<T*>(p.ptr[0]);
  Vec<T, VEC> wr[NV];
  if (w != nullptr) fastrow::load_row<T, TPR, NV>(w, nvec, lane, wr);
  float aw[NV][VEC], ab[NV][VEC];
#pragma unroll
  for (int i = 0; i < NV; ++i)
#pragma unroll
    for (int j = 0; j < VEC; ++j) aw[i][j] = ab[i][j] = 0.0f;
  // Every group walks as many rows as the block's first (the reductions
  // have block barriers); a group past the last row works on zeros and
  // writes nothing. With PIPE, each thread copies its vectors of the next
  // row's grad and x into its own shared slots (cp.async) as soon as it
  // has taken this row's into registers, so that a block keeps a row's
  // loads in flight while it reduces and writes the one before: one block
  // per SM leaves no other block to hide the latency. The rows are one
  // outer dim here (norm_backward_dispatch), so an offset is a product.
  const std::int64_t step = std::int64_t(gridDim.x) * RPB;
  const T* const gp = reinterpret_cast<const T*>(p.ptr[1]);
  const T* const xp = reinterpret_cast<const T*>(p.ptr[2]);
  Vec<T, VEC>* const stage = reinterpret_cast<Vec<T, VEC>*>(smem);  // [grad, x][NV][block]
  auto slot = [&](int t, int i) -> Vec<T, VEC>& {
    return stage[(t * NV + i) * kNormBlock + threadIdx.x];
  };
  auto stage_row = [&](std::int64_t base) {
    const std::int64_t row = base + grp;
    if (row < p.rows)
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const std::int64_t e = lane + std::int64_t(i) * TPR;
        if (e < nvec) {
          fastrow::cp_async16(&slot(0, i), gp + row * p.outer_strides[1][0] + e * VEC);
          fastrow::cp_async16(&slot(1, i), xp + row * p.outer_strides[2][0] + e * VEC);
        }
      }
    fastrow::cp_async_commit();
  };
  std::int64_t base = std::int64_t(blockIdx.x) * RPB;
  if constexpr (PIPE) stage_row(base);
#pragma unroll 1
  for (; base < p.rows; base += step) {
    const std::int64_t row = base + grp;
    const bool active = row < p.rows;
    Vec<T, VEC> g[NV], x[NV];
    if constexpr (PIPE) {
      fastrow::cp_async_wait<0>();  // this thread's copies of the row are in
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const bool in = active && lane + std::int64_t(i) * TPR < nvec;
        g[i] = in ? slot(0, i) : splat<VEC, T>(cvt<T>(0.0f));
        x[i] = in ? slot(1, i) : splat<VEC, T>(cvt<T>(0.0f));
      }
      stage_row(base + step);  // its own slots, already read: no barrier
    } else {
      const std::int64_t r = active ? row : 0;
      fastrow::load_row<T, TPR, NV>(gp + r * p.outer_strides[1][0], active ? nvec : 0, lane, g);
      fastrow::load_row<T, TPR, NV>(xp + r * p.outer_strides[2][0], active ? nvec : 0, lane, x);
    }
    auto valid = [&](int i) { return lane + std::int64_t(i) * TPR < nvec; };
    auto gh = [&](int i, int j) {
      const float gj = fastrow::widen(g[i], j);
      return w != nullptr ? gj * fastrow::widen(wr[i], j) : gj;
    };
    float mu = 0.0f, var, a = 0.0f, bsum;
    if constexpr (RMS) {
      float s[2] = {0.0f, 0.0f};  // sum(x^2), sum(gh x); zeros past the end
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float xj = fastrow::widen(x[i], j);
          s[0] += xj * xj;
          s[1] += gh(i, j) * xj;
        }
      red(s);
      var = s[0] * inv_n;
      bsum = s[1];
    } else {
      float s[1] = {0.0f};
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j) s[0] += fastrow::widen(x[i], j);
      red(s);
      mu = s[0] * inv_n;
      float t[3] = {0.0f, 0.0f, 0.0f};  // sum((x - mu)^2), sum(gh), sum(gh (x - mu))
#pragma unroll
      for (int i = 0; i < NV; ++i)
        if (valid(i))
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            const float xc = fastrow::widen(x[i], j) - mu, h = gh(i, j);
            t[0] += xc * xc;
            t[1] += h;
            t[2] += h * xc;
          }
      red(t);
      var = t[0] * inv_n;
      a = t[1] * inv_n;
      bsum = t[2];
    }
    const float rstd = 1.0f / sqrtf(var + eps);
    // dx = rstd (gh - a - xhat mean(gh xhat)), xhat = (x - mu) rstd and
    // mean(gh xhat) = rstd bsum / n: rstd (gh - a) - (x - mu) rb.
    const float rb = bsum * inv_n * rstd * rstd * rstd;
    T* const dx = dxp == nullptr ? nullptr : dxp + (active ? row : 0) * p.outer_strides[0][0];
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const std::int64_t e = lane + std::int64_t(i) * TPR;
      if (!active || e >= nvec) continue;
      Vec<T, VEC> o;
#pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float xc = fastrow::widen(x[i], j) - mu;
        o.v[j] = cvt<T>(rstd * (gh(i, j) - a) - xc * rb);
        if constexpr (PARAMS) {
          const float gj = fastrow::widen(g[i], j);
          aw[i][j] += gj * xc * rstd;
          if constexpr (!RMS) ab[i][j] += gj;
        }
      }
      if (dx != nullptr) st_vec<T, VEC>(dx + e * VEC, o);
    }
  }
  if constexpr (PIPE) fastrow::cp_async_wait<0>();  // nothing in flight past here
  if constexpr (PARAMS) {
    // The block's groups add into group 0 in group order; slot (i, j) of a
    // thread is comb[(grp * E + i * VEC + j) * TPR + lane]. Group 0 writes
    // the block's partial row r.
    auto flush = [&](float(&acc)[NV][VEC], int r) {
      if constexpr (RPB > 1) {
        __syncthreads();
        if (grp > 0)
#pragma unroll
          for (int i = 0; i < NV; ++i)
#pragma unroll
            for (int j = 0; j < VEC; ++j) comb[(grp * E + i * VEC + j) * TPR + lane] = acc[i][j];
        __syncthreads();
        if (grp == 0)
          for (int k = 1; k < RPB; ++k)
#pragma unroll
            for (int i = 0; i < NV; ++i)
#pragma unroll
              for (int j = 0; j < VEC; ++j) acc[i][j] += comb[(k * E + i * VEC + j) * TPR + lane];
      }
      if (grp != 0) return;
      float* dst = static_cast<float*>(part.data) + (std::int64_t(blockIdx.x) * part.kp + r) * p.n;
#pragma unroll
      for (int i = 0; i < NV; ++i) {
        const std::int64_t e = lane + std::int64_t(i) * TPR;
        if (e < nvec)
#pragma unroll
          for (int q = 0; q < VEC / 4; ++q)
            reinterpret_cast<float4*>(dst + e * VEC)[q] =
                make_float4(acc[i][4 * q], acc[i][4 * q + 1], acc[i][4 * q + 2], acc[i][4 * q + 3]);
      }
    };
    flush(aw, 0);
    if constexpr (!RMS) flush(ab, 1);
  }
}

// Partial sums of `units` units, [units][cols] (cols = kp * n), added in
// unit order: a block owns 32 columns and its 8 warps fixed slices of the
// units, whose sums are then added in slice order. side[k][j] = the sum of
// column k * n + j, written for the k whose bit is set in `wanted`.
template <class C>
__global__ void __launch_bounds__(256)
    norm_partials_sum(const C* part, std::int64_t units, std::int64_t n, int kp, C* side,
                      std::int64_t s0, std::int64_t s1, unsigned wanted) {
  __shared__ C sh[8][32];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % 32, slice = threadIdx.x / 32;
  const std::int64_t cols = kp * n, c = std::int64_t(blockIdx.x) * 32 + lane;
  const std::int64_t u0 = units * slice / 8, u1 = units * (slice + 1) / 8;
  C s = 0;
  if (c < cols) {
#pragma unroll 4
    for (std::int64_t u = u0; u < u1; ++u) s += part[u * cols + c];
  }
  sh[slice][lane] = s;
  __syncthreads();
  if (slice == 0 && c < cols) {
    C t = sh[0][lane];
#pragma unroll
    for (int i = 1; i < 8; ++i) t += sh[i][lane];
    const std::int64_t k = c / n, j = c - k * n;
    if (wanted >> k & 1u) side[k * s0 + j * s1] = t;
  }
}

}  // namespace
}  // namespace strata::cuda
