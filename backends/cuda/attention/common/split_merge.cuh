#pragma once
// Merges split-KV partials by log-sum-exp: for one (batch-head, row),
// out = sum_s 2^(m_s - m*) acc_s / sum_s 2^(m_s - m*) l_s, m* = max_s m_s,
// lse = (m* + log2 l) ln 2. Splits with no kept key carry m_s = -inf, l_s = 0.
// Partials and lse are in the compute type T; out is in the storage type S
// (bf16/f16 beside T = float; S = T for f32 and f64), rounded once.
//
// merge_splits is the one copy of the many-splits merge: the decode kernel's
// last block of a row runs it in place (decode/kernel.cuh), and
// attn_merge_kernel runs it as a kernel of its own behind the streaming
// kernels (dispatch/launch_streaming.cu) and the wgmma kernels' split keys
// (dispatch/launch_16bit.cu). Its first and last steps (merge_max,
// merge_write) serve merge_splits_wide too, the bulk-copy decode kernel's
// in-place merge (decode/bulk_kernel.cuh), which differs only in how many
// loads it keeps in flight.
// attn_merge_small_kernel is the few-splits form for the streaming kernels.
#include "cuda/attention/common/streaming_params.cuh"

namespace strata::cuda {

constexpr int kMergeThreads = 256;
constexpr int kMergeCols = 32;  // output columns per merge block
constexpr int kMaxSplits = 1024;

// Shared memory merge_splits<T, S, NT, CH> needs, in elements of T.
template <int NT, int CH>
constexpr int merge_smem_elems() {
  return (NT / 32) * (32 * CH + 1);
}

// The max of m over the splits of row group rid (partials sstride rows
// apart): every thread of the NT-thread block calls it and gets it. red:
// shared memory of the merge, rows of LD elements, one a warp.
template <class T, int NT, int LD>
__device__ __forceinline__ T merge_max(const T* ml, int nsplit, std::int64_t sstride,
                                       std::int64_t rid, T* red) {
  constexpr int W = NT / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  T mx = neg_inf<T>();
  for (int s = threadIdx.x; s < nsplit; s += NT)
    mx = fmax_(mx, __ldcg(ml + 2 * (s * sstride + rid)));
#pragma unroll
  for (int sh = 16; sh > 0; sh >>= 1) mx = fmax_(mx, __shfl_xor_sync(0xffffffffu, mx, sh));
  if (lane == 0) red[warp * LD] = mx;
  __syncthreads();
  mx = red[0];
#pragma unroll
  for (int w = 1; w < W; ++w) mx = fmax_(mx, red[w * LD]);
  return mx;
}

// The start of a block's merge of row group rid: the partials it reads
// (ml, acc; a row group's splits sstride rows apart) and their max over the
// splits, mx (m_use: mx, or 0 when no split kept a key), with every thread
// past merge_max's use of red.
template <class T>
struct MergeRead {
  std::int64_t sstride;
  const T *ml, *acc;
  int nsplit;
  T mx, m_use;
};
template <class T, int NT, int LD>
__device__ __forceinline__ MergeRead<T> merge_read(const AttnParams& p, std::int64_t rid, T* red) {
  const std::int64_t sstride = p.bh * p.a.M;  // partial rows per split
  const T* ml = static_cast<const T*>(p.part_ml);
  const T* acc = static_cast<const T*>(p.part_acc);
  const int nsplit = static_cast<int>(p.splits);
  const T mx = merge_max<T, NT, LD>(ml, nsplit, sstride, rid, red);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  __syncthreads();  // red is written again after
  return {sstride, ml, acc, nsplit, mx, m_use};
}

// The end of a merge: each warp's l and column sums (sum[k]: column
// c0 + 32 k + lane) meet in red (as merge_max), and out columns c0 ..
// c0 + 32 * CH - 1 below dv of row group rid become their sum / l, rounded
// to S once; lse (base e, from the max mx) when c0 == 0. Every thread of
// the NT-thread block calls it.
template <class T, class S, int NT, int CH>
__device__ __forceinline__ void merge_write(const AttnParams& p, std::int64_t rid, std::int64_t c0,
                                            const T* sum, T l, T mx, T* red) {
  constexpr int W = NT / 32, LD = 32 * CH + 1;
  const AttentionArgs& a = p.a;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int k = 0; k < CH; ++k) red[warp * LD + 32 * k + lane] = sum[k];
  if (lane == 0) red[warp * LD + 32 * CH] = l;
  __syncthreads();
  l = 0;
#pragma unroll
  for (int w = 0; w < W; ++w) l += red[w * LD + 32 * CH];
  const T inv = l == T(0) ? T(0) : T(1) / l;

  const std::int64_t bh = rid / a.M, row = rid % a.M;
  const HeadOffsets off = head_offsets(p, bh);
  S* out = static_cast<S*>(a.out.data) + off.o + row * attn::row_stride(a.out);
  for (int x = threadIdx.x; x < 32 * CH; x += NT) {
    const std::int64_t c = c0 + x;
    if (c >= a.dv) break;
    T t = 0;
#pragma unroll
    for (int w = 0; w < W; ++w) t += red[w * LD + x];
    out[c * attn::col_stride(a.out)] = to_storage<S>(t * inv);
  }
  if (threadIdx.x == 0 && c0 == 0 && a.lse.data)
    static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
        l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
}

// Merges the splits of row group rid (= bh * M + row) into out columns
// c0 .. c0 + 32 * CH - 1 (those below dv), and writes lse when c0 == 0:
// every thread of the NT-thread block calls it. Warp w takes splits w,
// w + W, ... (W = NT / 32), its lanes 32 adjacent columns per chunk; the
// warps' sums meet in red (merge_smem_elems<NT, CH>() elements of shared
// memory that no thread still reads when it is called). Partials are read
// through L2 (ld.global.cg): in the decode kernel other blocks of the same
// grid wrote them, and this SM's L1 is not coherent with theirs.
template <class T, class S, int NT, int CH>
__device__ __forceinline__ void merge_splits(const AttnParams& p, std::int64_t rid, std::int64_t c0,
                                             T* red) {
  constexpr int W = NT / 32, LD = 32 * CH + 1;
  const MergeRead<T> in = merge_read<T, NT, LD>(p, rid, red);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Each warp weighs its splits once and sums l (the same in every lane)
  // and its lanes' columns.
  T l = 0, s[CH];
#pragma unroll
  for (int k = 0; k < CH; ++k) s[k] = 0;
    // Two splits' loads in flight per step: four spilled in f64 (ptxas, sm_90a).
#pragma unroll 2
  for (int sp = warp; sp < in.nsplit; sp += W) {
    const std::int64_t r = sp * in.sstride + rid;
    const T w = fexp2(__ldcg(in.ml + 2 * r) - in.m_use);
    l = fma(w, __ldcg(in.ml + 2 * r + 1), l);
#pragma unroll
    for (int k = 0; k < CH; ++k) {
      const std::int64_t c = c0 + 32 * k + lane;
      if (c < p.a.dv) s[k] = fma(w, __ldcg(in.acc + r * p.a.dv + c), s[k]);
    }
  }
  merge_write<T, S, NT, CH>(p, rid, c0, s, l, in.mx, red);
}

// merge_splits for many splits at the end of one block (the bulk-copy
// decode kernel's): the same sums, but each warp issues the loads of R = 16
// splits before it uses any (merge_splits: two), so that a row of 256
// splits costs a few L2 round trips per warp of 5 instead of 26.
// Columns lane + 32 k (k < CH) of out, every thread of the NT-thread block
// calls it; red: merge_smem_elems<NT, CH>() elements of T.
template <class T, class S, int NT, int CH>
__device__ __forceinline__ void merge_splits_wide(const AttnParams& p, std::int64_t rid, T* red) {
  constexpr int W = NT / 32, LD = 32 * CH + 1, R = 16;
  const MergeRead<T> in = merge_read<T, NT, LD>(p, rid, red);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // Splits past nsplit read as (m -inf, l 0, acc 0): weight 0.
  T l = 0, sum[CH];
#pragma unroll
  for (int k = 0; k < CH; ++k) sum[k] = 0;
  for (int s0 = warp; s0 < in.nsplit; s0 += R * W) {
    T mv[R], lv[R], av[R][CH];
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const int s = s0 + i * W;
      const bool ok = s < in.nsplit;
      const std::int64_t r = std::int64_t(ok ? s : 0) * in.sstride + rid;
      mv[i] = ok ? __ldcg(in.ml + 2 * r) : neg_inf<T>();
      lv[i] = ok ? __ldcg(in.ml + 2 * r + 1) : T(0);
#pragma unroll
      for (int k = 0; k < CH; ++k) {
        const std::int64_t c = 32 * k + lane;
        av[i][k] = ok && c < p.a.dv ? __ldcg(in.acc + r * p.a.dv + c) : T(0);
      }
    }
#pragma unroll
    for (int i = 0; i < R; ++i) {
      const T w = fexp2(mv[i] - in.m_use);
      l = fma(w, lv[i], l);
#pragma unroll
      for (int k = 0; k < CH; ++k) sum[k] = fma(w, av[i][k], sum[k]);
    }
  }
  merge_write<T, S, NT, CH>(p, rid, 0, sum, l, in.mx, red);
}

// Many splits (the streaming kernels with more than kMergeSmallSplits, and
// the decode kernel when it had no ticket counters): one block per
// (bh, row, 32-column chunk), so a row with many splits is merged by
// several SMs at once.
template <class T, class S = T>
__global__ void __launch_bounds__(kMergeThreads) attn_merge_kernel(const AttnParams p) {
  __shared__ T red[merge_smem_elems<kMergeThreads, 1>()];
  grid_dependency_wait();  // launched with PDL right behind the split kernel
  const std::int64_t cchunks = (p.a.dv + kMergeCols - 1) / kMergeCols;
  const std::int64_t rid = blockIdx.x / cchunks;  // (bh, row)
  const std::int64_t c0 = (blockIdx.x % cchunks) * kMergeCols;
  merge_splits<T, S, kMergeThreads, 1>(p, rid, c0, red);
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

// Blocks of the block-parallel merge of p (one per row and 32 columns): a
// launcher checks they fit one grid before it allocates the partials.
inline std::int64_t merge_blocks(const AttnParams& p) {
  return p.bh * p.a.M * ((p.a.dv + kMergeCols - 1) / kMergeCols);
}

// Launches the merge of p's partials on st right behind the split kernel
// (programmatic dependent launch): one thread per output element up to
// kMergeSmallSplits splits, the block-parallel form beyond. Returns the
// launch's error.
template <class T, class S = T>
cudaError_t launch_split_merge(const AttnParams& p, cudaStream_t st) {
  if (p.splits <= kMergeSmallSplits) {
    const std::int64_t n = p.bh * p.a.M * p.a.dv;
    return launch_pdl(attn_merge_small_kernel<T, S>, int((n + kMergeThreads - 1) / kMergeThreads),
                      kMergeThreads, 0, st, p);
  }
  return launch_pdl(attn_merge_kernel<T, S>, int(merge_blocks(p)), kMergeThreads, 0, st, p);
}

}  // namespace strata::cuda
