// cuda sum, mean, max, argmax (out has stride 0 along the row; argmax's is
// i64), softmax and log_softmax, on f32, f64, f16, bf16; f16/bf16/f32
// accumulate in f32 (per-thread partials, then a shuffle tree), f64 in f64.
// Contiguous softmax / log_softmax rows of up to 8192 f32 / 16384 f16, bf16
// elements take softmax_fast (rows_fast.cuh): the row read once into
// registers, its max, then the sum of exp(x - max), one reduction each.
#include <cmath>
#include <type_traits>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_fast.cuh"
#include "cuda/rows/rows_fused.cuh"
#include "cuda/rows/rows_reg.cuh"

namespace strata::cuda {
namespace {

enum class Red { sum, mean, max, argmax };

// (value, index) of the first maximum, a NaN larger than anything.
template <class C>
__device__ __forceinline__ bool better(C va, std::int64_t ia, C vb, std::int64_t ib) {
  const bool na = va != va, nb = vb != vb;
  if (na != nb) return na;
  if (!na && va != vb) return va > vb;
  return ia < ib;
}

template <Red OP, class T, int G>
__global__ void __launch_bounds__(kRowThreads) reduce_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  __shared__ std::int64_t shi[G / 32];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % G;
  const int rpb = kRowThreads / G;
  for (std::int64_t row = std::int64_t(blockIdx.x) * rpb + threadIdx.x / G; row < p.rows;
       row += std::int64_t(gridDim.x) * rpb) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    C v[kCap];
    if constexpr (OP == Red::sum || OP == Red::mean) {
      C s = 0;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
          for (int j = 0; j < VEC; ++j)
            if (tile_elem<G, VEC>(t0, lane, i, j) < p.n) s += v[i * VEC + j];
      }
      s = group_reduce<G>(s, SumOp{}, sh);
      if (OP == Red::mean) s = s / C(p.n);
      if (lane == 0) reinterpret_cast<T*>(p.ptr[0])[off[0]] = cvt<T>(s);
    } else {
      C best = 0;
      std::int64_t bi = INT64_MAX;
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
        load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int i = 0; i < kCap / VEC; ++i)
#pragma unroll
          for (int j = 0; j < VEC; ++j) {
            const std::int64_t e = tile_elem<G, VEC>(t0, lane, i, j);
            if (e < p.n && (bi == INT64_MAX || better(v[i * VEC + j], e, best, bi))) {
              best = v[i * VEC + j];
              bi = e;
            }
          }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const C ob = __shfl_xor_sync(0xffffffffu, best, o);
        const std::int64_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (oi != INT64_MAX && (bi == INT64_MAX || better(ob, oi, best, bi))) {
          best = ob;
          bi = oi;
        }
      }
      if constexpr (G > 32) {
        __syncthreads();
        if (threadIdx.x % 32 == 0) {
          sh[threadIdx.x / 32] = best;
          shi[threadIdx.x / 32] = bi;
        }
        __syncthreads();
        best = sh[0];
        bi = shi[0];
        for (int k = 1; k < G / 32; ++k)
          if (shi[k] != INT64_MAX && (bi == INT64_MAX || better(sh[k], shi[k], best, bi))) {
            best = sh[k];
            bi = shi[k];
          }
      }
      if (lane == 0) {
        if constexpr (OP == Red::max)
          reinterpret_cast<T*>(p.ptr[0])[off[0]] = cvt<T>(best);
        else
          reinterpret_cast<std::int64_t*>(p.ptr[0])[off[0]] = bi == INT64_MAX ? 0 : bi;
      }
    }
  }
}

template <bool Log, class T, int G>
__global__ void __launch_bounds__(kRowThreads) softmax_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % G;
  const int rpb = kRowThreads / G;
  const bool one_tile = p.n <= kTile;
  for (std::int64_t row = std::int64_t(blockIdx.x) * rpb + threadIdx.x / G; row < p.rows;
       row += std::int64_t(gridDim.x) * rpb) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[1]) + off[1];
    T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
    C v[kCap];
    // Pass 1: per thread a running max m and sum s of exp(x - m), rescaled
    // per tile (one exp per element).
    C m = -INFINITY, s = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
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
      if (!one_tile) load_tile<T, G>(x, p.rstride[1], p.n, t0, lane, p.vec, v);
      C y[kCap];
#pragma unroll
      for (int k = 0; k < kCap; ++k) {
        const C z = v[k] - rm;
        y[k] = Log ? z - lse : fn::m_exp(z) * inv;
      }
      store_tile<T, G>(out, p.rstride[0], p.n, t0, lane, p.vec, y);
    }
  }
}

// A row of -inf: x - max is NaN everywhere, as the reference; a NaN makes
// the sum NaN and every output NaN. Softmax keeps exp(x - max) in f32
// registers for the output pass in place of f32 inputs; 16-bit rows
// recompute it (keeping it beside them, with the rows staged ahead through
// shared memory, measured slower: rows_norm.cu). ONE (16-bit candidates):
// max and sum in one reduction of (max, sum) pairs, exp as ex2.approx,
// bf16 widened by fastrow::widen.
template <bool Log, class T, int TPR, int NV, bool ONE>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, NV, false>)
    softmax_fast(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr bool kKeepExp = !Log && std::is_same_v<T, C>;
  static_assert(!ONE || sizeof(T) == 2, "the one-reduction form is for 16-bit rows");
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage,
      [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], const Vec<T, VEC>(&in)[NV]) {
        Vec<T, VEC> r[NV];
#pragma unroll
        for (int i = 0; i < NV; ++i) r[i] = in[i];
        C m = -INFINITY, s = 0;
        if constexpr (ONE) {
          const fastrow::MaxSum st =
              red(fastrow::local_max_sum<TPR, NV>(r, lane, nvec), fastrow::MaxSumOp{});
          m = st.m;
          s = st.s;
        } else {
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
        }
        // ONE: exp(z) / s as 2^(z log2(e) - log2(s)), z = x - max exact in
        // f32 for 16-bit x near the max (no large product to round).
        const C inv = C(1) / s, lse = fn::m_log(s), l2s = ONE ? log2f(float(s)) : 0.0f;
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
                y = fastrow::elem<ONE, C>(r[i], j) - m - lse;
              else if constexpr (ONE)
                y = fastrow::ex2_approx(fmaf(fastrow::widen(r[i], j) - m, fastrow::kLog2e, -l2s));
              else
                y = fn::m_exp(cvt<C>(r[i].v[j]) - m) * inv;
              o.v[j] = cvt<T>(y);
            }
            st_vec<T, VEC>(out + e * VEC, o);
          }
        }
      });
}

// The `fused` candidate (16-bit rows, rows_fused.cuh): each thread's max mt
// and sum of e = 2^((x - mt) log2(e)) (one MUFU op per element), then one
// (max, sum) reduction combined online. softmax keeps e in f32 registers in
// place of the row and writes e * 2^((mt - max) log2(e)) / sum: one
// multiply per element, no second exponential. A thread whose elements are
// all -inf has e = 0 and a scale of 0; a row of -inf gets a NaN scale, a
// NaN makes the sum NaN (as softmax_fast).
// KEEP (softmax only): e kept; else (and log_softmax) the output is
// recomputed from the row, 2^((x - max) log2(e) - log2(sum)).
template <bool Log, class T, int TPR, int NV, bool KEEP>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, NV, false>)
    softmax_fused(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int NE = KEEP ? NV : 1;
  static_assert(!(Log && KEEP));
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage,
      [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], const Vec<T, VEC>(&in)[NV]) {
        Vec<T, VEC> r[NV];
#pragma unroll
        for (int i = 0; i < NV; ++i) r[i] = in[i];
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
        const float l2s = !Log && !KEEP ? log2f(g.s) : 0.0f;
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
              else if constexpr (KEEP)
                o.v[j] = cvt<T>(e[i][j] * scale);
              else
                o.v[j] = cvt<T>(fastrow::ex2_approx(fmaf(z, fastrow::kLog2e, -l2s)));
            }
            st_vec<T, VEC>(out + v * VEC, o);
          }
        }
      });
}

template <class K>
void launch_rows(K kernel_warp, K kernel_block, const RowParams& p, const IterArgs& a) {
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  if (p.n <= 32 * kCap)
    launch_row_kernel(kernel_warp, row_grid(p.rows, kRowThreads / 32), kRowThreads, st, p);
  else
    launch_row_kernel(kernel_block, row_grid(p.rows, 1), kRowThreads, st, p);
}

template <Red OP, class T>
void reduce(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0) return;
  p.vec = rows_vectorisable(a, 0b10, 16 / sizeof(T), sizeof(T));
  launch_rows(&reduce_kernel<OP, T, 32>, &reduce_kernel<OP, T, kRowThreads>, p, a);
}

template <bool Log, class T>
void softmax(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0 || p.n == 0) return;
  p.vec = rows_vectorisable(a, 0b11, 16 / sizeof(T), sizeof(T));
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  // One row per group: the staged 16-bit mode measured slower here (bf16
  // 4096 x 4096: 55.1% of copy against 62.5; rows_norm.cu), and so did the
  // register-pipelined candidates (docs/ops-log.md). STRATA_ROWS_VARIANT picks
  // the 16-bit candidates (rows_variant.hpp).
  const fastrow::Form form = fastrow::form_for<T>(false);
  if constexpr (sizeof(T) == 2) {
    if (!Log && form.reg && fastrow::softmax_reg<T>(p, form.reg, st)) return;
    if (form.fused && fastrow::launch_base<T>(p, st, [&](auto tpr, auto nv) {
          constexpr int TPR = decltype(tpr)::value, NV = decltype(nv)::value;
          // fusedw: softmax recomputes the exponentials
          return form.w_early ? softmax_fused<Log, T, TPR, NV, false>
                              : softmax_fused<Log, T, TPR, NV, !Log>;
        }))
      return;
  }
  if (fastrow::dispatch<T>(p, form.geometry, [&](auto tpr, auto nv) {
        constexpr int TPR = decltype(tpr)::value, NV = decltype(nv)::value;
        const int grid = fastrow::grid_for<TPR>(p.rows);
        constexpr int B = fastrow::kBlock<TPR>;
        if constexpr (sizeof(T) == 2) {
          // The warp geometry's 8 and 16 vectors are built in the ONE form only.
          if (form.one || NV > fastrow::kMaxNV)
            return launch_row_kernel(softmax_fast<Log, T, TPR, NV, true>, grid, B, st, p);
        }
        if constexpr (NV <= fastrow::kMaxNV)
          launch_row_kernel(softmax_fast<Log, T, TPR, NV, false>, grid, B, st, p);
      }))
    return;
  launch_rows(&softmax_kernel<Log, T, 32>, &softmax_kernel<Log, T, kRowThreads>, p, a);
}

}  // namespace

std::vector<EwEntry> row_reduce_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    using T = typename decltype(t)::type;
    v.push_back({"sum", dt, &reduce<Red::sum, T>});
    v.push_back({"mean", dt, &reduce<Red::mean, T>});
    v.push_back({"max", dt, &reduce<Red::max, T>});
    v.push_back({"argmax", dt, &reduce<Red::argmax, T>});
    v.push_back({"softmax", dt, &softmax<false, T>});
    v.push_back({"log_softmax", dt, &softmax<true, T>});
  });
  return v;
}

}  // namespace strata::cuda
