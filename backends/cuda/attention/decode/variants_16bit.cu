// bf16 and f16 decode variants (M <= 8): DecodeConfig<T = float, WARPS, QCH,
// VCH, U, S> reads q, k, v (and a float mask) in S, 4 elements (8 bytes) per
// lane per chunk, keeps the k, v rows packed (two S per register) until
// use, and computes in f32 (decode/kernel.cuh); d, dv <= 128 in one chunk
// per lane, <= 256 in two. Calls of d, dv <= 128 with more than
// kSmallDecode scores take the bulk-copy kernel (decode/bulk_kernel.cuh),
// which keeps its ring of keys in flight whatever its consumers do; smaller
// ones the register kernel, whose 4 blocks per SM start sooner
// (docs/log/cuda-tuning.md, "Decode with bulk copies: measured and
// promoted").
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/attention/decode/variant_make.cuh"

namespace strata::cuda {

// Scores (batch x heads x M x N) up to which the register decode kernel is
// preferred to the bulk-copy one: between the benchmark model's decode step
// at batch 1 (4104 scores per layer), where the register kernel is faster,
// and at batch 16 (65664), where the bulk-copy one is.
constexpr std::int64_t kSmallDecode = 16384;

const std::vector<Variant>& variants_16bit() {
  using B = __nv_bfloat16;
  using H = __half;
  static const std::vector<Variant> v = {
      // U 8 keys per warp step at d <= 128, as f32: twice as many (the same
      // bytes in flight as f32) measured slower at every size
      // (docs/log/cuda-tuning.md, "Session 10 trials", the decode table).
      for_small(decode<DecodeConfig<float, 4, 1, 1, 8, B>>("bf16.decode.d128"), kSmallDecode),
      for_small(decode<DecodeConfig<float, 4, 1, 1, 8, H>>("f16.decode.d128"), kSmallDecode),
      decode<DecodeConfig<float, 4, 2, 2, 8, B>>("bf16.decode.d256"),
      decode<DecodeConfig<float, 4, 2, 2, 8, H>>("f16.decode.d256"),
      // The bulk-copy kernel: a producer warp keeps a ring of 4 slots of 8
      // consumer warps x 8 keys in flight (128 KB at d 128, one block per
      // SM); the consumers reduce their 8 scores by the transposed
      // butterfly (23 shuffles per 8 keys instead of 40).
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, B, true>>("bf16.decode.d128.bulk", 1),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, H, true>>("f16.decode.d128.bulk", 1),
  };
  return v;
}

}  // namespace strata::cuda
