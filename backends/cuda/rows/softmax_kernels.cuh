#pragma once
// The kernels of softmax and log_softmax along the rows, and their
// launchers: per thread a running max and sum of exp(x - max), one
// reduction each (softmax_kernel, any layout); contiguous rows of up to
// 8192 f32 / 16384 f16, bf16 elements read once into registers
// (softmax_fast, rows_fast.cuh); 16-bit rows in one (max, sum) reduction
// with one exponential per element (softmax_fused, rows_fused.cuh).
// rows_reduce.cu picks; the lab's candidates (backends/cuda/lab/rows/)
// launch the same kernels.
#include <cmath>
#include <type_traits>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_fast.cuh"
#include "cuda/rows/rows_fused.cuh"

namespace strata::cuda {
namespace {

template <bool Log, class T, int G>
__global__ void __launch_bounds__(kRowThreads) softmax_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  const bool one_tile = p.n <= kTile;
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    C v[kCap];
    // Pass 1: per thread a running max m and sum s of exp(x - m), rescaled
    // per tile (one exp per element).
    C m = -INFINITY, s = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
      C tm = m;
#pragma unroll
      for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) tm = MaxOp{}(tm, v[i * VEC + j]);
      s = tm == -INFINITY ? C(0) : s * fn::m_exp(m - tm);
      m = tm;
#pragma unroll
      for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
        for (int j = 0; j < VEC; ++j)
          if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) s += fn::m_exp(v[i * VEC + j] - m);
    }
    const C rm = group_reduce<G>(m, MaxOp{}, sh);
    s = m == -INFINITY ? C(0) : s * fn::m_exp(m - rm);
    const C rs = group_reduce<G>(s, SumOp{}, sh);
    const C inv = C(1) / rs, lse = fn::m_log(rs);
    // Pass 2: the outputs (a row of -inf: x - m is NaN everywhere, as the
    // reference; a NaN makes rs NaN and every output NaN).
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (!one_tile) load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
      C y[kCap];
#pragma unroll
      for (int k = 0; k < kCap; ++k) {
        const C z = v[k] - rm;
        y[k] = Log ? z - lse : fn::m_exp(z) * inv;
      }
      store_tile<T, G>(out, p.row_stride[0], p.n, t0, lane, p.vec, y);
    }
  });
}

template <bool Log, class T, int TPR, int NV>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, false>)
    softmax_fast(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr bool kKeepExp = !Log && std::is_same_v<T, C>;
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage, [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], Vec<T, VEC>(&r)[NV]) {
        C m = -INFINITY, s = 0;
#pragma unroll
        for (int i = 0; i < NV; ++i)
          if (lane + std::int64_t(i) * TPR < nvec)
#pragma unroll
            for (int j = 0; j < VEC; ++j) m = MaxOp{}(m, cvt<C>(r[i].v[j]));
        m = red(m, MaxOp{});
#pragma unroll
        for (int i = 0; i < NV; ++i)
          if (lane + std::int64_t(i) * TPR < nvec)
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              const C ex = fn::m_exp(cvt<C>(r[i].v[j]) - m);
              if constexpr (kKeepExp) r[i].v[j] = ex;
              s += ex;
            }
        s = red(s, SumOp{});
        const C inv = C(1) / s, lse = fn::m_log(s);
        T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const std::int64_t e = lane + std::int64_t(i) * TPR;
          if (e < nvec) {
            Vec<T, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              C y;
              if constexpr (kKeepExp)
                y = r[i].v[j] * inv;
              else if constexpr (Log)
                y = cvt<C>(r[i].v[j]) - m - lse;
              else
                y = fn::m_exp(cvt<C>(r[i].v[j]) - m) * inv;
              o.v[j] = cvt<T>(y);
            }
            st_vec<T, VEC>(out + e * VEC, o);
          }
        }
      });
}

// 16-bit rows (rows_fused.cuh): each thread's max mt and sum of e =
// 2^((x - mt) log2(e)) (one MUFU op per element), then one (max, sum)
// reduction combined online. softmax keeps e in f32 registers in place of
// the row and writes e * 2^((mt - max) log2(e)) / sum: one multiply per
// element, no second exponential; log_softmax recomputes its output from
// the row, (x - max) - log(sum). A thread whose elements are all -inf has
// e = 0 and a scale of 0; a row of -inf gets a NaN scale, a NaN makes the
// sum NaN (as softmax_fast).
template <bool Log, class T, int TPR, int NV>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, false>)
    softmax_fused(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr bool KEEP = !Log;  // e kept for the output pass
  constexpr int NE = KEEP ? NV : 1;
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage, [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], Vec<T, VEC>(&r)[NV]) {
        const float mt = fastrow::local_max<TPR, NV>(r, lane, nvec);
        const float shift = mt == -INFINITY ? 0.0f : mt;  // all -inf (or NaN): e 0 (or NaN)
        float e[NE][VEC], s[NV];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          s[i] = 0.0f;
          if (fastrow::vec_valid<TPR>(lane, i, nvec))
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              const float ex =
                  fastrow::ex2_approx((fastrow::widen(r[i], j) - shift) * fastrow::kLog2e);
              if constexpr (KEEP) e[i][j] = ex;
              s[i] += ex;
            }
        }
        float st = s[0];
#pragma unroll
        for (int i = 1; i < NV; ++i) st += s[i];
        const fastrow::MaxSum g = red(fastrow::MaxSum{mt, st}, fastrow::MaxSumOp{});
        const float scale =
            KEEP ? __fdividef(fastrow::ex2_approx((mt - g.m) * fastrow::kLog2e), g.s) : 0.0f;
        const float lse = Log ? logf(g.s) : 0.0f;
        T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const std::int64_t v = lane + std::int64_t(i) * TPR;
          if (v < nvec) {
            Vec<T, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              const float z = fastrow::widen(r[i], j) - g.m;
              if constexpr (Log)
                o.v[j] = cvt<T>(z - lse);
              else
                o.v[j] = cvt<T>(e[i][j] * scale);
            }
            st_vec<T, VEC>(out + v * VEC, o);
          }
        }
      });
}

// ---- launchers (false: the kernel does not take p, nothing launched) ----------------
template <bool Log, class T>
void launch_softmax_general(const RowParams& p, cudaStream_t st) {
  launch_group_rows(&softmax_kernel<Log, T, 32>, &softmax_kernel<Log, T, kRowThreads>, p, st);
}

template <bool Log, class T>
bool launch_softmax_fast(const RowParams& p, cudaStream_t st) {
  return fastrow::launch_base<T>(p, st, [](auto tpr, auto nv) {
    return softmax_fast<Log, T, decltype(tpr)::value, decltype(nv)::value>;
  });
}

template <bool Log, class T>
bool launch_softmax_fused(const RowParams& p, cudaStream_t st) {
  static_assert(sizeof(T) == 2, "the fused kernels are for 16-bit rows");
  return fastrow::launch_base<T>(p, st, [](auto tpr, auto nv) {
    return softmax_fused<Log, T, decltype(tpr)::value, decltype(nv)::value>;
  });
}

}  // namespace
}  // namespace strata::cuda
