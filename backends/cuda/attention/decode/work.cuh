#pragma once
// What one block of the decode kernels (attention_decode.cuh,
// attention_decode_bulk.cuh) works on: blockIdx.x decoded as (query row,
// key split, batch-head), the head's k, v and mask, and the split's keys cut
// to the row's band. The decode form of block_work (attention_common.cuh):
// one query row a block, no output-column chunks.
#include <cstdint>

#include "cuda/attention/attention_common.cuh"

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

}  // namespace strata::cuda
