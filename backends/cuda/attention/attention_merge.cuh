#pragma once
// Merges split-KV partials by log-sum-exp: for one (batch-head, row),
// out = sum_s 2^(m_s - m*) acc_s / sum_s 2^(m_s - m*) l_s, m* = max_s m_s,
// lse = (m* + log2 l) ln 2. Splits with no kept key carry m_s = -inf, l_s = 0.
// Partials and lse are in the compute type T; out is in the storage type S
// (bf16/f16 beside T = float; S = T for f32 and f64), rounded once.
#include "cuda/attention/attention_common.cuh"

namespace strata::cuda {

constexpr int kMergeThreads = 256;
constexpr int kMergeCols = 32;  // output columns per merge block
constexpr int kMaxSplits = 1024;

template <class T, class S = T>
__global__ void __launch_bounds__(kMergeThreads) attn_merge_kernel(const AttnParams p) {
  __shared__ T wts[kMaxSplits];
  __shared__ T red[kMergeThreads / 32][33];
  grid_dependency_wait();  // launched with PDL right behind the split kernel
  const AttentionArgs& a = p.a;
  // One block per (bh, row, 32-column chunk): a row with many splits (decode)
  // is merged by several SMs at once.
  const std::int64_t cchunks = (a.dv + kMergeCols - 1) / kMergeCols;
  const std::int64_t rid = blockIdx.x / cchunks;  // (bh, row)
  const std::int64_t c0 = (blockIdx.x % cchunks) * kMergeCols;
  const std::int64_t bh = rid / a.M, row = rid % a.M;
  const std::int64_t sstride = p.bh * a.M;
  const T* ml = static_cast<const T*>(p.part_ml);
  const T* acc = static_cast<const T*>(p.part_acc);
  const int nsplit = static_cast<int>(p.splits);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  constexpr int W = kMergeThreads / 32;

  T mx = neg_inf<T>();
  for (int s = threadIdx.x; s < nsplit; s += kMergeThreads)
    mx = fmax_(mx, ml[2 * (s * sstride + rid)]);
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1) mx = fmax_(mx, __shfl_xor_sync(0xffffffffu, mx, sh));
  if (lane == 0) red[warp][0] = mx;
  __syncthreads();
  mx = red[0][0];
#pragma unroll
  for (int w = 1; w < W; ++w) mx = fmax_(mx, red[w][0]);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  __syncthreads();

  T l = 0;
  for (int s = threadIdx.x; s < nsplit; s += kMergeThreads) {
    const T w = fexp2(ml[2 * (s * sstride + rid)] - m_use);
    wts[s] = w;
    l += w * ml[2 * (s * sstride + rid) + 1];
  }
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1) l += __shfl_xor_sync(0xffffffffu, l, sh);
  if (lane == 0) red[warp][1] = l;
  __syncthreads();
  l = 0;
#pragma unroll
  for (int w = 0; w < W; ++w) l += red[w][1];
  __syncthreads();
  const T inv = l == T(0) ? T(0) : T(1) / l;

  S* out = static_cast<S*>(a.out.data);
  const HeadOffsets off = head_offsets(p, bh);
  // Warp w sums splits w, w+W, ...; lanes take 32 adjacent columns.
  {
    const std::int64_t c = c0 + lane;
    T s = 0;
    if (c < a.dv)
      for (int sp = warp; sp < nsplit; sp += W)
        s = fma(wts[sp], acc[(sp * sstride + rid) * a.dv + c], s);
    red[warp][lane] = s;
    __syncthreads();
    if (warp == 0) {
      T t = 0;
#pragma unroll
      for (int w = 0; w < W; ++w) t += red[w][lane];
      if (c < a.dv)
        out[off.o + row * attn::row_stride(a.out) + c * attn::col_stride(a.out)] =
            to_storage<S>(t * inv);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0 && c0 == 0 && a.lse.data)
    static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
        l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
}

// Few splits: one thread per output element (row, column) loops over the
// splits itself; the (m, l) pairs of a row are read by its dv threads from
// cache.
constexpr int kMergeSmallSplits = 32;

template <class T, class S = T>
__global__ void __launch_bounds__(kMergeThreads) attn_merge_small_kernel(const AttnParams p) {
  grid_dependency_wait();  // launched with PDL right behind the split kernel
  const AttentionArgs& a = p.a;
  const std::int64_t e = std::int64_t(blockIdx.x) * kMergeThreads + threadIdx.x;
  const std::int64_t rows = p.bh * a.M;
  if (e >= rows * a.dv) return;
  const std::int64_t rid = e / a.dv, c = e % a.dv;
  const std::int64_t bh = rid / a.M, row = rid % a.M;
  const std::int64_t sstride = rows;
  const T* ml = static_cast<const T*>(p.part_ml);
  const T* acc = static_cast<const T*>(p.part_acc);
  const int nsplit = static_cast<int>(p.splits);
  T mx = neg_inf<T>();
  for (int s = 0; s < nsplit; ++s) mx = fmax_(mx, ml[2 * (s * sstride + rid)]);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  T l = 0, sum = 0;
  for (int s = 0; s < nsplit; ++s) {
    const std::int64_t r = s * sstride + rid;
    const T w = fexp2(ml[2 * r] - m_use);
    l = fma(w, ml[2 * r + 1], l);
    sum = fma(w, acc[r * a.dv + c], sum);
  }
  const HeadOffsets off = head_offsets(p, bh);
  static_cast<S*>(a.out.data)[off.o + row * attn::row_stride(a.out) + c * attn::col_stride(a.out)] =
      to_storage<S>(l == T(0) ? T(0) : sum / l);
  if (c == 0 && a.lse.data)
    static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
        l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
}

}  // namespace strata::cuda
