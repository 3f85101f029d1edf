#pragma once
// One block of the decode kernels (decode/kernel.cuh, decode/bulk_kernel.cuh):
// what it works on, blockIdx.x decoded as (query row, key split,
// batch-head) with the head's k, v and mask and the split's keys cut to the
// row's band (decode_work, decode_keys: the decode form of block_work in
// common/streaming_params.cuh, one query row a block, no output-column
// chunks), and how it ends: the warps' states combined into the row or the
// split's partial, and the ticket that tells the row's last split to merge.
#include <cstdint>
#include <type_traits>

#include "cuda/attention/common/streaming_params.cuh"
#include "cuda/attention/decode/row_loads.cuh"

namespace strata::cuda {

// S: the storage type of k, v and a float mask.
template <class S>
struct DecodeWork {
  std::int64_t row, split, bh;
  HeadOffsets off;
  const S *k, *v;
  const void* mask;  // this head's mask (bool or S), null without one
};

template <class S>
__device__ __forceinline__ DecodeWork<S> decode_work(const AttnParams& p) {
  const AttentionArgs& a = p.a;
  std::int64_t bid = blockIdx.x;
  const std::int64_t row = bid % a.M;
  bid /= a.M;
  const std::int64_t split = bid % p.splits;
  const std::int64_t bh = bid / p.splits;
  const HeadOffsets off = head_offsets(p, bh);
  const S* kg = static_cast<const S*>(a.k.data) + off.k;
  const S* vg = static_cast<const S*>(a.v.data) + off.v;
  const void* mask_head = nullptr;
  if (p.mask_kind == kMaskBool) mask_head = static_cast<const unsigned char*>(a.mask.data) + off.mk;
  if (p.mask_kind == kMaskFloat) mask_head = static_cast<const S*>(a.mask.data) + off.mk;
  return {row, split, bh, off, kg, vg, mask_head};
}

// Keys [j_begin, j_end) of split `split` that query row `row` keeps under
// the band (none when j_begin >= j_end).
struct DecodeKeys {
  std::int64_t j_begin, j_end;
};

__device__ __forceinline__ DecodeKeys decode_keys(const AttnParams& p, std::int64_t row,
                                                  std::int64_t split) {
  const AttentionArgs& a = p.a;
  std::int64_t j_begin = split * p.keys_per_split;
  std::int64_t j_end = min(a.N, j_begin + p.keys_per_split);
  j_begin = max(j_begin, row + a.band_lo);
  j_end = min(j_end, row + a.band_hi + 1);
  return {j_begin, j_end};
}

// The lane's slice of q's row (QCH chunks), pre-scaled into base 2 once per
// row: the first step of both decode kernels.
template <class T, class S, int QCH>
__device__ __forceinline__ void load_q_log2(T (&q)[QCH * Vec<T>::n], const AttnParams& p,
                                            const HeadOffsets& off, std::int64_t row, int lane) {
  const AttentionArgs& a = p.a;
  load_row<T, S, QCH>(q, static_cast<const S*>(a.q.data) + off.q + row * attn::row_stride(a.q),
                      attn::col_stride(a.q), a.d, p.k_vec && p.q_vec, true, lane);
  const T sl2 = static_cast<T>(p.scale_log2);
#pragma unroll
  for (int e = 0; e < QCH * Vec<T>::n; ++e) q[e] *= sl2;
}

// The end of a decode block, in three parts that both decode kernels share
// (attn_decode_kernel, attn_decode_bulk_kernel): each warp that took keys
// stores its online-softmax state (m_run, l_run, acc) in sm, a [WARPS][2 +
// 32 * VE] array of T (decode_store_warp); after a barrier the block's NT
// threads combine the WARPS states and write the normalised row to out
// (one split: returns true) or this split's partial row and (m, l)
// (decode_write_block);
// with ticket counters, decode_last_split tells every thread whether this
// block finished its row's splits last and merges them.
template <class C>
__device__ __forceinline__ void decode_store_warp(typename C::type* sm, int warp, int lane,
                                                  typename C::type m_run, typename C::type l_run,
                                                  const typename C::type (&acc)[C::VE]) {
  constexpr int LDW = 2 + 32 * C::VE;
  typename C::type* mine = sm + warp * LDW;
  if (lane == 0) {
    mine[0] = m_run;
    mine[1] = l_run;
  }
#pragma unroll
  for (int e = 0; e < C::VE; ++e) mine[2 + lane * C::VE + e] = acc[e];
}

template <class C, int NT>
__device__ __forceinline__ bool decode_write_block(const AttnParams& p, const HeadOffsets& off,
                                                   std::int64_t row, std::int64_t split,
                                                   std::int64_t bh, const typename C::type* sm) {
  using T = typename C::type;
  using S = typename C::storage;
  constexpr int WARPS = C::WARPS, VE = C::VE, VEC = C::VEC;
  constexpr int LDW = 2 + 32 * VE;
  const AttentionArgs& a = p.a;
  T mx = neg_inf<T>();
#pragma unroll
  for (int w = 0; w < WARPS; ++w) mx = fmax_(mx, sm[w * LDW]);
  const T m_use = mx == neg_inf<T>() ? T(0) : mx;
  T wt[WARPS];
  T l = 0;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) {
    wt[w] = fexp2(sm[w * LDW] - m_use);
    l += wt[w] * sm[w * LDW + 1];
  }
  const bool final_out = p.splits == 1;
  const bool vec_layout = p.v_vec;
  const T inv = final_out ? (l == T(0) ? T(0) : T(1) / l) : T(1);
  // Element x of the warps' accumulators weighed and summed, and its column.
  const auto combined = [&](int x, std::int64_t& col) {
    T s = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) s = fma(wt[w], sm[w * LDW + 2 + x], s);
    const int ln = x / VE, k = x % VE;
    col = lane_elem(vec_layout, ln, k / VEC, k % VEC, VEC);
    return s;
  };
  if constexpr (std::is_same_v<S, T>) {
    T* dst;
    std::int64_t cs;
    if (final_out) {
      dst = static_cast<T*>(a.out.data) + off.o + row * attn::row_stride(a.out);
      cs = attn::col_stride(a.out);
    } else {
      dst = static_cast<T*>(p.part_acc) + ((split * p.bh + bh) * a.M + row) * a.dv;
      cs = 1;
    }
    for (int x = threadIdx.x; x < 32 * VE; x += NT) {
      std::int64_t col;
      const T s = combined(x, col);
      if (col < a.dv) dst[col * cs] = s * inv;
    }
  } else {
    // Final: out in S, rounded once; else this split's partial row in T.
    S* const out_row = static_cast<S*>(a.out.data) + off.o + row * attn::row_stride(a.out);
    const std::int64_t cs = attn::col_stride(a.out);
    T* const part_row =
        final_out ? nullptr
                  : static_cast<T*>(p.part_acc) + ((split * p.bh + bh) * a.M + row) * a.dv;
    for (int x = threadIdx.x; x < 32 * VE; x += NT) {
      std::int64_t col;
      const T s = combined(x, col);
      if (col < a.dv) {
        if (final_out)
          out_row[col * cs] = to_storage<S>(s * inv);
        else
          part_row[col] = s;
      }
    }
  }
  if (threadIdx.x == 0) {
    if (final_out) {
      if (a.lse.data)
        static_cast<T*>(a.lse.data)[off.l + row * attn::row_stride(a.lse)] =
            l == T(0) ? neg_inf<T>() : (mx + flog2(l)) * static_cast<T>(0.6931471805599453);
    } else {
      const std::int64_t r = (split * p.bh + bh) * a.M + row;
      static_cast<T*>(p.part_ml)[2 * r] = mx;
      static_cast<T*>(p.part_ml)[2 * r + 1] = l;
    }
  }
  return final_out;
}

// The row's last split to finish merges them all: each thread's partial
// stores are made visible device-wide before thread 0 takes the block's
// ticket; the block with the last ticket sees every other block's
// partials (their fences came before their tickets), and puts the
// counter back to 0 for the next launch or graph replay (no other block
// of this launch touches it again). The closing barrier also orders the
// block's reads of sm before the merge reuses it.
__device__ __forceinline__ bool decode_last_split(const AttnParams& p, unsigned* merge_count,
                                                  std::int64_t rid) {
  __threadfence();
  __syncthreads();
  bool last = false;
  if (threadIdx.x == 0) {
    last = atomicAdd(merge_count + rid, 1u) == unsigned(p.splits - 1);
    if (last) {
      merge_count[rid] = 0;
      __threadfence();
    }
  }
  return __syncthreads_or(last);
}

}  // namespace strata::cuda
