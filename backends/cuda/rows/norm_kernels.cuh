#pragma once
// The kernels of layer_norm (out, x, weight, bias; scalar[0] = eps; biased
// variance) and rms_norm (out, x, weight; scalar[0] = eps), and their
// launchers: statistics in f32 (f64 for f64) over two passes (mean, then
// the squared deviations from it), the row kept in registers when it fits a
// tile (norm_kernel); contiguous rows of up to 8192 f32 / 16384 f16, bf16
// elements read once into registers, the mean and the squared deviations
// summed over the registers, weight and bias read as vectors in the output
// pass (norm_fast, rows_fast.cuh); rms_norm's 16-bit rows in one reduction
// with a short chain (norm_fused, rows_fused.cuh). rows_norm.cu picks;
// the lab's candidates (backends/cuda/lab/rows/) launch the same kernels.
#include <cmath>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_fast.cuh"
#include "cuda/rows/rows_fused.cuh"

namespace strata::cuda {
namespace {

template <bool RMS, class T, int G>
__global__ void __launch_bounds__(kRowThreads) norm_kernel(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  constexpr std::int64_t kTile = std::int64_t(G) * kCap;
  __shared__ C sh[G / 32];
  const bool one_tile = p.n <= kTile;
  const C eps = static_cast<C>(p.scalar[0]);
  const T* w = reinterpret_cast<const T*>(p.ptr[2]);
  const T* b = RMS ? nullptr : reinterpret_cast<const T*>(p.ptr[3]);
  for_group_rows<G>(p, [&](int lane, const RowOffsets& off) {
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
        load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
#pragma unroll
        for (int k = 0; k < kCap; ++k)
          if (valid(t0, k)) s += v[k];
      }
      mu = group_reduce<G>(s, SumOp{}, sh) / C(p.n);
    }
    // Pass 2: mean of squared deviations (of squares for rms_norm).
    C q = 0;
    for (std::int64_t t0 = 0; t0 < p.n; t0 += kTile) {
      if (RMS || !one_tile) load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
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
      if (!one_tile) load_tile<T, G>(x, p.row_stride[1], p.n, t0, lane, p.vec, v);
      C y[kCap];
#pragma unroll
      for (int k = 0; k < kCap; ++k) y[k] = (v[k] - mu) * inv;
      if (w != nullptr) {
        C t[kCap];
        load_tile<T, G>(w + off[2], p.row_stride[2], p.n, t0, lane, p.vec, t);
#pragma unroll
        for (int k = 0; k < kCap; ++k) y[k] *= t[k];
      }
      if (b != nullptr) {
        C t[kCap];
        load_tile<T, G>(b + off[3], p.row_stride[3], p.n, t0, lane, p.vec, t);
#pragma unroll
        for (int k = 0; k < kCap; ++k) y[k] += t[k];
      }
      store_tile<T, G>(out, p.row_stride[0], p.n, t0, lane, p.vec, y);
    }
  });
}

// PIPE: rows staged through shared memory ahead of use (rows_fast.cuh).
template <bool RMS, class T, int TPR, int NV, bool PIPE>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, fastrow::kMinBlocks<TPR, PIPE && !RMS>)
    norm_fast(RowParams p) {
  using C = compute_t<T>;
  constexpr int VEC = 16 / sizeof(T);
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[PIPE ? fastrow::kStages<TPR, NV> * NV * fastrow::kBlock<TPR> : 1];
  fastrow::Reducer<TPR> red{sh};
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  const C eps = static_cast<C>(p.scalar[0]);
  const T* w = reinterpret_cast<const T*>(p.ptr[2]);
  const T* b = RMS ? nullptr : reinterpret_cast<const T*>(p.ptr[3]);
  fastrow::for_rows<T, TPR, NV, PIPE>(
      p, stage, [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], Vec<T, VEC>(&r)[NV]) {
        C mu = 0, q = 0;
        if constexpr (!RMS) {
          C s = 0;
#pragma unroll
          for (int i = 0; i < NV; ++i)
#pragma unroll
            for (int j = 0; j < VEC; ++j) s += cvt<C>(r[i].v[j]);  // zeros past the end
          mu = red(s, SumOp{}) / C(p.n);
        }
#pragma unroll
        for (int i = 0; i < NV; ++i)
          if (lane + std::int64_t(i) * TPR < nvec)
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              const C c = cvt<C>(r[i].v[j]) - mu;
              q += c * c;
            }
        q = red(q, SumOp{});
        const C inv = C(1) / fn::m_sqrt(q / C(p.n) + eps);
        T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const std::int64_t e = lane + std::int64_t(i) * TPR;
          if (e < nvec) {
            Vec<T, VEC> wv, bv, o;
            if (w != nullptr) wv = ld_vec<T, VEC>(w + off[2] + e * VEC);
            if (b != nullptr) bv = ld_vec<T, VEC>(b + off[3] + e * VEC);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              C y = (cvt<C>(r[i].v[j]) - mu) * inv;
              if (w != nullptr) y *= cvt<C>(wv.v[j]);
              if (b != nullptr) y += cvt<C>(bv.v[j]);
              o.v[j] = cvt<T>(y);
            }
            st_vec<T, VEC>(out + e * VEC, o);
          }
        }
      });
}

// 16-bit rows in one reduction with a short chain (rows_fused.cuh):
// rms_norm's sum of squares, or layer_norm's (count, sum, M2) after a
// thread-local exact two-pass; rsqrt of the variance. Weight and bias are
// read in the output pass.
template <bool RMS, class T, int TPR>
inline constexpr int kFusedMinBlocks = RMS ? fastrow::kMinBlocks<TPR, false>
                                           : (896 / fastrow::kBlock<TPR> > 0
                                                  ? 896 / fastrow::kBlock<TPR>
                                                  : 1);  // 72 registers
template <bool RMS, class T, int TPR, int NV>
__global__ void __launch_bounds__(fastrow::kBlock<TPR>, kFusedMinBlocks<RMS, T, TPR>)
    norm_fused(RowParams p) {
  constexpr int VEC = 16 / sizeof(T);
  __shared__ alignas(16) unsigned char sh[fastrow::kReduceBytes<TPR>];
  __shared__ Vec<T, VEC> stage[1];
  fastrow::Reducer<TPR> red{sh};
  const int lane = threadIdx.x % TPR;
  const std::int64_t nvec = p.n / VEC;
  // Independent of the data: taken while the first row is in flight.
  const float eps = static_cast<float>(p.scalar[0]);
  const float rn = 1.0f / static_cast<float>(p.n);
  const float c = fastrow::thread_count<TPR, NV, VEC>(lane, nvec);
  const float rc = c > 0.0f ? 1.0f / c : 0.0f;
  const T* w = reinterpret_cast<const T*>(p.ptr[2]);
  const T* b = RMS ? nullptr : reinterpret_cast<const T*>(p.ptr[3]);
  fastrow::for_rows<T, TPR, NV, false>(
      p, stage, [&](std::int64_t, const std::int64_t(&off)[kMaxOperands], Vec<T, VEC>(&r)[NV]) {
        Vec<T, VEC> wv, bv;
        float mu = 0.0f, var;
        if constexpr (RMS) {
          var = red(fastrow::local_sumsq<NV>(r), SumOp{}) * rn;
        } else {
          const fastrow::SumM2 st =
              red(fastrow::local_sum_m2<TPR, NV>(r, lane, nvec, c, rc), fastrow::SumM2Op{});
          mu = st.s * rn;
          var = st.m2 * rn;
        }
        const float inv = rsqrtf(var + eps);
        T* out = reinterpret_cast<T*>(p.ptr[0]) + off[0];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
          const std::int64_t e = lane + std::int64_t(i) * TPR;
          if (e < nvec) {
            if (w != nullptr) wv = ld_vec<T, VEC>(w + off[2] + e * VEC);
            if (b != nullptr) bv = ld_vec<T, VEC>(b + off[3] + e * VEC);
            Vec<T, VEC> o;
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
              float y = (fastrow::widen(r[i], j) - mu) * inv;
              if (w != nullptr) y *= cvt<float>(wv.v[j]);
              if (b != nullptr) y += cvt<float>(bv.v[j]);
              o.v[j] = cvt<T>(y);
            }
            st_vec<T, VEC>(out + e * VEC, o);
          }
        }
      });
}

// ---- launchers (false: the kernel does not take p, nothing launched) ----------------
template <bool RMS, class T>
void launch_norm_general(const RowParams& p, cudaStream_t st) {
  launch_group_rows(&norm_kernel<RMS, T, 32>, &norm_kernel<RMS, T, kRowThreads>, p, st);
}

// norm_fast on geometry g; 16-bit layer_norm rows of the narrow geometry
// are staged ahead (the pipelined mode).
template <bool RMS, class T>
bool launch_norm_fast(const RowParams& p, fastrow::Geometry g, cudaStream_t st) {
  return fastrow::dispatch<T>(p, g, [&](auto tpr, auto nv) {
    constexpr int TPR = decltype(tpr)::value, NV = decltype(nv)::value;
    constexpr int B = fastrow::kBlock<TPR>;
    if constexpr (!RMS && fastrow::kPipelined<T, TPR, NV>) {
      if (g == fastrow::Geometry::narrow)
        return launch_row_kernel(norm_fast<RMS, T, TPR, NV, true>,
                                 fastrow::grid_resident<TPR, true>(p.rows), B, st, p);
    }
    launch_row_kernel(norm_fast<RMS, T, TPR, NV, false>, fastrow::grid_for<TPR>(p.rows), B, st, p);
  });
}

template <bool RMS, class T>
bool launch_norm_fused(const RowParams& p, cudaStream_t st) {
  static_assert(sizeof(T) == 2, "the fused kernels are for 16-bit rows");
  return fastrow::launch_base<T>(p, st, [](auto tpr, auto nv) {
    return norm_fused<RMS, T, decltype(tpr)::value, decltype(nv)::value>;
  });
}

}  // namespace
}  // namespace strata::cuda
