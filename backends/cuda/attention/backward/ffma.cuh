#pragma once
// The backward's two main kernels on FFMA, for every dtype, layout and head
// dim that fits shared memory: f32 and f64 (T = S), and bf16/f16 head dims
// over the mma kernels' 128 (S 16-bit, T = f32). Operands are read through
// their strides, converted to T on the way into shared memory.
//
// Tiles of B queries x B keys; per tile (tile_scores), from the rows' L and
// Dw (preprocess.cuh):
//   P = exp(scale q.k (+ float mask) - L), 0 where the band or a bool mask
//   drops the key;   dS = P (dP - Dw),  dP = dO V^T
// - ffma_dkdv_kernel: one CTA per (batch, kv head, B keys); its K, V stay in
//   shared memory while it walks every q head of its group and every query
//   tile the band lets reach its keys: dV += P^T dO, dK += dS^T Q, summed in
//   shared memory in one fixed order and written once (dK times scale).
// - ffma_dq_kernel: one CTA per (batch, q head, B queries), walking the key
//   tiles in reach: dQ += dS K, written once (times scale).
// Nothing is summed across CTAs: no atomics, the same bits run to run.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"
#include "cuda/attention/backward/kernel_common.cuh"

namespace strata::cuda::bwd {

inline constexpr int kFfmaThreads = 256;  // 8 warps: rows ty + 8 r, columns tx + 32 m

#if defined(__CUDACC__)
#define STRATA_BWD_HD __host__ __device__
#else
#define STRATA_BWD_HD
#endif

// Shared memory of one tile size, in elements of T. Row pitches are odd, so
// that the 32 lanes reading one column of 32 rows hit 32 banks.
struct FfmaLayout {
  std::int64_t pd, pdv, pb;  // pitches of [B][d], [B][dv] and [B][B] tiles
  std::int64_t k, v, q, o, p, ds, l, dd, acc1, acc2, total;
};
STRATA_BWD_HD inline FfmaLayout ffma_layout(int B, std::int64_t d, std::int64_t dv) {
  FfmaLayout s{};
  s.pd = d | 1;
  s.pdv = dv | 1;
  s.pb = B + 1;
  s.k = 0;
  s.v = s.k + B * s.pd;
  s.q = s.v + B * s.pdv;
  s.o = s.q + B * s.pd;
  s.p = s.o + B * s.pdv;
  s.ds = s.p + B * s.pb;
  s.l = s.ds + B * s.pb;
  s.dd = s.l + B;
  s.acc1 = s.dd + B;        // dK (dkdv) or dQ (dq): [B][d]
  s.acc2 = s.acc1 + B * d;  // dV (dkdv): [B][dv]
  s.total = s.acc2 + B * dv;
  return s;
}
#undef STRATA_BWD_HD

#if defined(__CUDACC__)

__device__ __forceinline__ float exp_t(float x) { return expf(x); }
__device__ __forceinline__ double exp_t(double x) { return exp(x); }

// rows x cols of src (row stride rs, column stride cs) into dst (row pitch
// `pitch`) as T; rows valid..rows-1 are zeros.
template <class S, class T>
__device__ __forceinline__ void load_rows(T* dst, std::int64_t pitch, const S* src, std::int64_t rs,
                                          std::int64_t cs, int valid, int rows, int cols) {
  for (int e = threadIdx.x; e < rows * cols; e += blockDim.x) {
    const int r = e / cols, c = e - r * cols;
    dst[r * pitch + c] = r < valid ? T(src[r * rs + c * cs]) : T(0);
  }
}

// The first `valid` rows of src ([rows][cols], dense), times mul, into dst.
template <class S, class T>
__device__ __forceinline__ void store_rows(S* dst, std::int64_t rs, std::int64_t cs, const T* src,
                                           int cols, int valid, T mul) {
  for (int e = threadIdx.x; e < valid * cols; e += blockDim.x) {
    const int r = e / cols, c = e - r * cols;
    dst[r * rs + c * cs] = S(src[e] * mul);
  }
}

// acc[r][c] += sum_k A(k, r) Bm[k][c] for r, k < B and c < C, where
// A(k, r) = A[k * ak + r * ar] and acc has row pitch C. Thread (ty, tx) owns
// rows ty + 8 q and columns tx + 32 m, 128 columns at a time: the same
// elements at every call, so calls on one acc need no barrier between them.
template <class T, int B>
__device__ __forceinline__ void acc_gemm(T* acc, int C, const T* A, std::int64_t ak,
                                         std::int64_t ar, const T* Bm, std::int64_t pb) {
  constexpr int R = B / 8;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  for (int c0 = 0; c0 < C; c0 += 128) {
    bool ok[4];
    T v[R][4];
#pragma unroll
    for (int m = 0; m < 4; ++m) ok[m] = c0 + tx + 32 * m < C;
#pragma unroll
    for (int q = 0; q < R; ++q)
#pragma unroll
      for (int m = 0; m < 4; ++m) v[q][m] = ok[m] ? acc[(ty + 8 * q) * C + c0 + tx + 32 * m] : T(0);
#pragma unroll 8
    for (int k = 0; k < B; ++k) {
      T x[R], y[4];
#pragma unroll
      for (int q = 0; q < R; ++q) x[q] = A[k * ak + (ty + 8 * q) * ar];
#pragma unroll
      for (int m = 0; m < 4; ++m) y[m] = ok[m] ? Bm[k * pb + c0 + tx + 32 * m] : T(0);
#pragma unroll
      for (int q = 0; q < R; ++q)
#pragma unroll
        for (int m = 0; m < 4; ++m) v[q][m] += x[q] * y[m];
    }
#pragma unroll
    for (int q = 0; q < R; ++q)
#pragma unroll
      for (int m = 0; m < 4; ++m)
        if (ok[m]) acc[(ty + 8 * q) * C + c0 + tx + 32 * m] = v[q][m];
  }
}

// Whether the tile of queries [i0, i0 + B) x keys [j0, j0 + B) needs the
// per-element rules: a mask tensor, or a band that cuts it.
__device__ __forceinline__ bool tile_needs_mask(const AttentionArgs& a, std::int64_t i0,
                                                std::int64_t j0, int B) {
  const bool inside = j0 >= i0 + B - 1 + a.band_lo && j0 + B - 1 <= i0 + a.band_hi;
  return a.mask.data != nullptr || !inside;
}

// P and dS of one tile into sP and sdS (layout s), from sQ, sdO, sL, sD
// (queries i0..) and sK, sV (keys j0..). Thread (ty, tx) owns queries
// ty + 8 r and key tx. mb / mf: the (batch, head)'s bool or float mask.
template <class S, class T, int B>
__device__ __forceinline__ void tile_scores(const BwdParams& p, const FfmaLayout& s, T* sm,
                                            std::int64_t i0, std::int64_t j0,
                                            const unsigned char* mb, const S* mf, bool need_mask) {
  constexpr int R = B / 8;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  if (tx >= B) return;
  const AttentionArgs& a = p.g.fwd;
  T sc[R], dp[R];
#pragma unroll
  for (int r = 0; r < R; ++r) sc[r] = dp[r] = T(0);
  const T* k = sm + s.k + tx * s.pd;
  for (int c = 0; c < int(a.d); ++c) {
    const T kc = k[c];
#pragma unroll
    for (int r = 0; r < R; ++r) sc[r] += sm[s.q + (ty + 8 * r) * s.pd + c] * kc;
  }
  const T* v = sm + s.v + tx * s.pdv;
  for (int c = 0; c < int(a.dv); ++c) {
    const T vc = v[c];
#pragma unroll
    for (int r = 0; r < R; ++r) dp[r] += sm[s.o + (ty + 8 * r) * s.pdv + c] * vc;
  }
  const T scale = T(p.scale);
  const std::int64_t mrs = attn::row_stride(a.mask), mcs = attn::col_stride(a.mask);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const int il = ty + 8 * r;
    const std::int64_t i = i0 + il, j = j0 + tx;
    T x = sc[r] * scale;
    bool keep = true;
    if (need_mask) {
      keep = i < a.M && j < a.N && j >= i + a.band_lo && j <= i + a.band_hi;
      if (keep && mb) keep = mb[i * mrs + j * mcs] != 0;
      if (keep && mf) x += T(mf[i * mrs + j * mcs]);
    }
    // L = +inf where the row kept nothing: exp gives 0 there.
    const T pr = keep ? exp_t(x - sm[s.l + il]) : T(0);
    sm[s.p + il * s.pb + tx] = pr;
    sm[s.ds + il * s.pb + tx] = pr * (dp[r] - sm[s.dd + il]);
  }
}

template <class S, class T, int B>
__global__ void __launch_bounds__(kFfmaThreads) ffma_dkdv_kernel(const BwdParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const AttentionArgs& a = p.g.fwd;
  const FfmaLayout s = ffma_layout(B, a.d, a.dv);
  const int d = int(a.d), dv = int(a.dv);
  const std::int64_t jt = blockIdx.x % p.tiles, bk = blockIdx.x / p.tiles;
  const std::int64_t b = bk / a.Hkv, hk = bk - b * a.Hkv;
  const std::int64_t j0 = jt * B;
  const int nj = a.N - j0 < B ? int(a.N - j0) : B;
  const std::int64_t krs = attn::row_stride(a.k), vrs = attn::row_stride(a.v);
  load_rows<S, T>(sm + s.k, s.pd, attn::head_ptr<const S>(a.k, b, hk) + j0 * krs, krs,
                  attn::col_stride(a.k), nj, B, d);
  load_rows<S, T>(sm + s.v, s.pdv, attn::head_ptr<const S>(a.v, b, hk) + j0 * vrs, vrs,
                  attn::col_stride(a.v), nj, B, dv);
  for (int e = threadIdx.x; e < B * (d + dv); e += blockDim.x) sm[s.acc1 + e] = T(0);
  // Queries that keep one of the keys [j0, j0 + nj): i + lo <= j <= i + hi.
  const std::int64_t i_lo = j0 - a.band_hi > 0 ? j0 - a.band_hi : 0;
  const std::int64_t i_hi = j0 + nj - a.band_lo < a.M ? j0 + nj - a.band_lo : a.M;
  const std::int64_t qrs = attn::row_stride(a.q), ors = attn::row_stride(p.g.dout);
  for (std::int64_t h = hk * p.group; h < (hk + 1) * p.group; ++h) {
    const S* q = attn::head_ptr<const S>(a.q, b, h);
    const S* dO = attn::head_ptr<const S>(p.g.dout, b, h);
    const T* L = static_cast<const T*>(p.L) + (b * a.Hq + h) * p.Mp;
    const T* Dw = static_cast<const T*>(p.Dw) + (b * a.Hq + h) * p.Mp;
    const unsigned char* mb;
    const S* mf;
    head_mask<S>(a, b, h, mb, mf);
    for (std::int64_t i0 = i_lo / B * B; i0 < i_hi; i0 += B) {
      __syncthreads();  // the last tile's readers are done
      const int ni = a.M - i0 < B ? int(a.M - i0) : B;
      load_rows<S, T>(sm + s.q, s.pd, q + i0 * qrs, qrs, attn::col_stride(a.q), ni, B, d);
      load_rows<S, T>(sm + s.o, s.pdv, dO + i0 * ors, ors, attn::col_stride(p.g.dout), ni, B, dv);
      if (threadIdx.x < B) {  // i0 + B <= Mp
        sm[s.l + threadIdx.x] = L[i0 + threadIdx.x];
        sm[s.dd + threadIdx.x] = Dw[i0 + threadIdx.x];
      }
      __syncthreads();
      tile_scores<S, T, B>(p, s, sm, i0, j0, mb, mf, tile_needs_mask(a, i0, j0, B));
      __syncthreads();
      acc_gemm<T, B>(sm + s.acc2, dv, sm + s.p, s.pb, 1, sm + s.o, s.pdv);  // dV += P^T dO
      acc_gemm<T, B>(sm + s.acc1, d, sm + s.ds, s.pb, 1, sm + s.q, s.pd);   // dK += dS^T Q
    }
  }
  __syncthreads();
  const std::int64_t dkrs = attn::row_stride(p.g.dk), dvrs = attn::row_stride(p.g.dv);
  store_rows<S, T>(attn::head_ptr<S>(p.g.dk, b, hk) + j0 * dkrs, dkrs, attn::col_stride(p.g.dk),
                   sm + s.acc1, d, nj, T(p.scale));
  store_rows<S, T>(attn::head_ptr<S>(p.g.dv, b, hk) + j0 * dvrs, dvrs, attn::col_stride(p.g.dv),
                   sm + s.acc2, dv, nj, T(1));
}

template <class S, class T, int B>
__global__ void __launch_bounds__(kFfmaThreads) ffma_dq_kernel(const BwdParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sm = reinterpret_cast<T*>(smem_raw);
  const AttentionArgs& a = p.g.fwd;
  const FfmaLayout s = ffma_layout(B, a.d, a.dv);
  const int d = int(a.d), dv = int(a.dv);
  const DqCta cta = dq_cta(p);
  const std::int64_t bh = cta.bh, b = cta.b, h = cta.h, hk = cta.hk, i0 = cta.tile * B;
  const int ni = a.M - i0 < B ? int(a.M - i0) : B;
  const std::int64_t qrs = attn::row_stride(a.q), ors = attn::row_stride(p.g.dout);
  load_rows<S, T>(sm + s.q, s.pd, attn::head_ptr<const S>(a.q, b, h) + i0 * qrs, qrs,
                  attn::col_stride(a.q), ni, B, d);
  load_rows<S, T>(sm + s.o, s.pdv, attn::head_ptr<const S>(p.g.dout, b, h) + i0 * ors, ors,
                  attn::col_stride(p.g.dout), ni, B, dv);
  if (threadIdx.x < B) {
    sm[s.l + threadIdx.x] = static_cast<const T*>(p.L)[bh * p.Mp + i0 + threadIdx.x];
    sm[s.dd + threadIdx.x] = static_cast<const T*>(p.Dw)[bh * p.Mp + i0 + threadIdx.x];
  }
  for (int e = threadIdx.x; e < B * d; e += blockDim.x) sm[s.acc1 + e] = T(0);
  const unsigned char* mb;
  const S* mf;
  head_mask<S>(a, b, h, mb, mf);
  // Keys that one of the queries [i0, i0 + ni) keeps.
  const std::int64_t j_lo = i0 + a.band_lo > 0 ? i0 + a.band_lo : 0;
  const std::int64_t j_hi = i0 + ni + a.band_hi < a.N ? i0 + ni + a.band_hi : a.N;
  const S* k = attn::head_ptr<const S>(a.k, b, hk);
  const S* v = attn::head_ptr<const S>(a.v, b, hk);
  const std::int64_t krs = attn::row_stride(a.k), vrs = attn::row_stride(a.v);
  for (std::int64_t j0 = j_lo / B * B; j0 < j_hi; j0 += B) {
    __syncthreads();  // the last tile's readers are done
    const int nj = a.N - j0 < B ? int(a.N - j0) : B;
    load_rows<S, T>(sm + s.k, s.pd, k + j0 * krs, krs, attn::col_stride(a.k), nj, B, d);
    load_rows<S, T>(sm + s.v, s.pdv, v + j0 * vrs, vrs, attn::col_stride(a.v), nj, B, dv);
    __syncthreads();
    tile_scores<S, T, B>(p, s, sm, i0, j0, mb, mf, tile_needs_mask(a, i0, j0, B));
    __syncthreads();
    acc_gemm<T, B>(sm + s.acc1, d, sm + s.ds, 1, s.pb, sm + s.k, s.pd);  // dQ += dS K
  }
  __syncthreads();
  const std::int64_t rs = attn::row_stride(p.g.dq);
  store_rows<S, T>(attn::head_ptr<S>(p.g.dq, b, h) + i0 * rs, rs, attn::col_stride(p.g.dq),
                   sm + s.acc1, d, ni, T(p.scale));
}

#endif  // __CUDACC__

}  // namespace strata::cuda::bwd
