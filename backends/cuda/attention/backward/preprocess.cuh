#pragma once
// The backward's first kernel: per query row of every (batch, q head), the
// two values the main kernels read per row (bwd_params.hpp):
//   L  = lse, times log2(e) when p.base2 (+inf where lse = -inf, i.e. the
//        row kept no key, and on padding)
//   Dw = rowsum(dO o O) - dlse
// rowsum(dO o O) equals rowsum(dP o P) (FlashAttention-2's identity), so the
// main kernels need no second pass over the keys for it. One warp per row,
// summed in a fixed shuffle tree: the same bits run to run.
// S: the storage type of out and dout; T: the compute type, also lse's.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/bwd_params.hpp"

namespace strata::cuda::bwd {

template <class S, class T>
__global__ void __launch_bounds__(256) preprocess_kernel(const BwdParams p) {
  const AttentionArgs& a = p.g.fwd;
  const std::int64_t row = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x & 31;
  const std::int64_t rows = p.bh * p.Mp;
  if (row >= rows) return;
  T* L = static_cast<T*>(p.L) + row;
  T* Dw = static_cast<T*>(p.Dw) + row;
  const std::int64_t bh = row / p.Mp, i = row - bh * p.Mp;
  const T inf = T(__int_as_float(0x7f800000));
  if (i >= a.M) {
    if (lane == 0) {
      *L = inf;
      *Dw = T(0);
    }
    return;
  }
  const std::int64_t b = bh / a.Hq, h = bh - b * a.Hq;
  const S* o = static_cast<const S*>(a.out.data) + attn::row_offset(a.out, b, h, i);
  const S* dO = static_cast<const S*>(p.g.dout.data) + attn::row_offset(p.g.dout, b, h, i);
  const std::int64_t ocs = attn::col_stride(a.out), dcs = attn::col_stride(p.g.dout);
  T sum = 0;
  for (std::int64_t c = lane; c < a.dv; c += 32) sum += T(o[c * ocs]) * T(dO[c * dcs]);
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  if (lane != 0) return;
  const T lse = static_cast<const T*>(a.lse.data)[attn::row_offset(a.lse, b, h, i)];
  const T dl = p.g.dlse.data
                   ? static_cast<const T*>(p.g.dlse.data)[attn::row_offset(p.g.dlse, b, h, i)]
                   : T(0);
  *L = lse == -inf ? inf : p.base2 ? lse * T(1.4426950408889634) : lse;
  *Dw = sum - dl;
}

}  // namespace strata::cuda::bwd
