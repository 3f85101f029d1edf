#pragma once
// The (batch, q head)'s slice of the backward's mask, for both main kernel
// families (ffma.cuh and mma.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "strata/attention_args.hpp"

namespace strata::cuda::bwd {

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
