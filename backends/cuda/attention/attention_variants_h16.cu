// bf16 and f16 decode variants (M <= 8): DecodeConfig<T = float, WARPS, QCH,
// VCH, U, S> reads q, k, v (and a float mask) in S, 4 elements (8 bytes) per
// lane per chunk, and computes in f32 (attention_decode.cuh). The same
// shapes as the f32 decode variants: d, dv <= 128 in one chunk per lane,
// <= 256 in two.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/attention/attention_variant_make.cuh"

namespace strata::cuda {

const std::vector<Variant>& variants_h16() {
  static const std::vector<Variant> v = {
      decode<DecodeConfig<float, 4, 1, 1, 8, __nv_bfloat16>>("bf16.decode.d128"),
      decode<DecodeConfig<float, 4, 2, 2, 4, __nv_bfloat16>>("bf16.decode.d256"),
      decode<DecodeConfig<float, 4, 1, 1, 8, __half>>("f16.decode.d128"),
      decode<DecodeConfig<float, 4, 2, 2, 4, __half>>("f16.decode.d256"),
      // Tuning candidates, only by STRATA_CUDA_VARIANT=name: twice the keys
      // in flight per warp (a bf16 row is half an f32 row's bytes).
      decode<DecodeConfig<float, 4, 1, 1, 16, __nv_bfloat16>>("bf16.decode.d128.u16", false),
      decode<DecodeConfig<float, 4, 1, 1, 16, __half>>("f16.decode.d128.u16", false),
  };
  return v;
}

}  // namespace strata::cuda
