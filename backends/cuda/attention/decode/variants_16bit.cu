// bf16 and f16 decode variants (M <= 8): DecodeConfig<T = float, WARPS, QCH,
// VCH, U, S> reads q, k, v (and a float mask) in S, 4 elements (8 bytes) per
// lane per chunk, keeps the k, v rows packed (two S per register) until
// use, and computes in f32 (decode/kernel.cuh). d, dv <= 128 in one chunk
// per lane, <= 256 in two. The keys per warp step of the f32 variants (U 8):
// twice as many (U 16: the same bytes in flight as f32) measured slower
// on the H200 (below). At d, dv <= 128 calls of more than 16384 scores take
// the bulk-copy kernel (.tma8.xr, decode/bulk_kernel.cuh), which keeps
// its ring of keys in flight whatever its consumers do; smaller ones keep
// the register kernel (.d128), whose 4 blocks per SM start sooner. Runs
// s12r1/s12r2 (H200, docs/cuda-tuning.md), bulk against register: one head
// of N 262144 0.041 / 0.054 ms, B 8 x H 32 x N 32768 0.968 / 1.23 ms; the
// benchmark model's bf16 graph step (8 heads, 512 keys) 0.189 / 0.179 ms at
// batch 1 (4104 scores per layer) and 0.277 / 0.348 ms at batch 16 (65664).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/attention/decode/variant_make.cuh"

namespace strata::cuda {

// Scores (batch x heads x M x N) up to which the register decode kernel is
// preferred to the bulk-copy one: the geometric middle of the two model steps
// measured (4104 and 65664).
constexpr std::int64_t kSmallDecode = 16384;

const std::vector<Variant>& variants_16bit() {
  using B = __nv_bfloat16;
  using H = __half;
  static const std::vector<Variant> v = {
      // U 8 at d <= 128, f32's keys per step: against U 16 (H200, session
      // 9 run 3, bf16) one head of N 262144 0.050 against 0.055 ms, B 8 x
      // H 32 x N 32768 1.17 against 1.77 ms, the benchmark model's graph
      // step 0.245 against 0.269 ms (f16 takes the same shape, not timed).
      for_small(decode<DecodeConfig<float, 4, 1, 1, 8, B>>("bf16.decode.d128"), kSmallDecode),
      for_small(decode<DecodeConfig<float, 4, 1, 1, 8, H>>("f16.decode.d128"), kSmallDecode),
      decode<DecodeConfig<float, 4, 2, 2, 8, B>>("bf16.decode.d256"),
      decode<DecodeConfig<float, 4, 2, 2, 8, H>>("f16.decode.d256"),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, B, true>>("bf16.decode.d128.tma8.xr", 1,
                                                                   true),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, H, true>>("f16.decode.d128.tma8.xr", 1,
                                                                   true),
      // Tuning candidates, only by STRATA_CUDA_VARIANT=name. Packed rows
      // with twice the keys per step (.u16, the first default) and four
      // times (.u32); and the first version (.cvt8, .cvt4: rows widened
      // right behind each load, U 8 / 4), for A/B against it.
      decode<DecodeConfig<float, 4, 1, 1, 16, B>>("bf16.decode.d128.u16", false),
      decode<DecodeConfig<float, 4, 1, 1, 32, B>>("bf16.decode.d128.u32", false),
      decode<DecodeConvertAtLoad<float, 4, 1, 1, 8, B>>("bf16.decode.d128.cvt8", false),
      decode<DecodeConvertAtLoad<float, 4, 2, 2, 4, B>>("bf16.decode.d256.cvt4", false),
      decode<DecodeConfig<float, 4, 1, 1, 16, H>>("f16.decode.d128.u16", false),
      decode<DecodeConfig<float, 4, 1, 1, 32, H>>("f16.decode.d128.u32", false),
      decode<DecodeConvertAtLoad<float, 4, 1, 1, 8, H>>("f16.decode.d128.cvt8", false),
      decode<DecodeConvertAtLoad<float, 4, 2, 2, 4, H>>("f16.decode.d256.cvt4", false),
      // Other bulk-copy candidates (decode/bulk_kernel.cuh): a producer warp
      // keeps a ring of STAGES slots of WARPS x U keys in flight. .tma: 4
      // consumer warps, 4 slots of 32 keys (64 KB at d 128), the plan at 2
      // blocks per SM; .tma8: 8 warps, 4 slots of 64 keys (128 KB), one
      // block per SM (fewer splits to merge); .xr: the same with the
      // transposed score reduction (23 shuffles per 8 keys instead of 40);
      // .tma8.s6 (bf16 only, an A/B of the bytes in flight): 6 slots, 192 KB.
      decode_bulk<DecodeBulkConfig<float, 4, 1, 1, 8, 4, B>>("bf16.decode.d128.tma", 2),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, B>>("bf16.decode.d128.tma8", 1),
      decode_bulk<DecodeBulkConfig<float, 4, 1, 1, 8, 4, B, true>>("bf16.decode.d128.tma.xr", 2),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 6, B>>("bf16.decode.d128.tma8.s6", 1),
      decode_bulk<DecodeBulkConfig<float, 4, 1, 1, 8, 4, H>>("f16.decode.d128.tma", 2),
      decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, H>>("f16.decode.d128.tma8", 1),
      decode_bulk<DecodeBulkConfig<float, 4, 1, 1, 8, 4, H, true>>("f16.decode.d128.tma.xr", 2),
  };
  return v;
}

}  // namespace strata::cuda
