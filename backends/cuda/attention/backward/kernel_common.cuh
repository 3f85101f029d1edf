#pragma once
// What both families of the backward's main kernels (ffma.cuh and mma.cuh)
// share: the query tile and heads of a dQ CTA, and the mask of a head.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"
#include "strata/attention_args.hpp"

namespace strata::cuda::bwd {

// A dQ kernel's CTA: row bh of the workspaces (batch b, q head h, kv head
// hk) and query tile `tile`. Under a band that bounds keys from above
// (causal), the last query tiles reach the most keys: they go first.
struct DqCta {
  std::int64_t tile, bh, b, h, hk;
};
__device__ __forceinline__ DqCta dq_cta(const BwdParams& p) {
  const AttentionArgs& a = p.g.fwd;
  DqCta c;
  c.tile = blockIdx.x % p.tiles;
  c.bh = blockIdx.x / p.tiles;
  if (a.band_hi < kNoLimit) c.tile = p.tiles - 1 - c.tile;
  c.b = c.bh / a.Hq;
  c.h = c.bh - c.b * a.Hq;
  c.hk = c.h / p.group;
  return c;
}

// The bool (mb) or float (mf, of the inputs' dtype S) mask of (batch b,
// q head h), or nulls when there is none.
template <class S>
__device__ __forceinline__ void head_mask(const AttentionArgs& a, std::int64_t b, std::int64_t h,
                                          const unsigned char*& mb, const S*& mf) {
  mb = nullptr;
  mf = nullptr;
  if (!a.mask.data) return;
  const std::int64_t off = attn::head_offset(a.mask, b, h);
  if (a.mask.dtype == DType::boolean)
    mb = static_cast<const unsigned char*>(a.mask.data) + off;
  else
    mf = static_cast<const S*>(a.mask.data) + off;
}

}  // namespace strata::cuda::bwd
