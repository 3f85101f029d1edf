// Decode candidates kept for tuning (candidates.hpp):
// - bf16.decode.d128.bulk.per_key_sums: the default bulk-copy kernel's shape (8 consumer
//   warps, 4 slots of 64 keys, one block per SM) with the plain reduction of
//   each key's score (decode_softmax_step, 40 shuffles per 8 keys) instead
//   of the transposed one: the A/B of the consumers' instruction count,
//   which limits the kernel once the ring keeps the bytes in flight
//   (docs/log/cuda-tuning.md, "Decode with bulk copies: measured and
//   promoted").
// Compiled only in a tuning build.
#include <cuda_bf16.h>

#include "cuda/attention/decode/variant_make.cuh"
#include "cuda/lab/attention/candidates.hpp"

namespace strata::cuda::lab {

const std::vector<Variant>& decode_candidates() {
  static const std::vector<Variant> v = {
      candidate(decode_bulk<DecodeBulkConfig<float, 8, 1, 1, 8, 4, __nv_bfloat16>>(
          "bf16.decode.d128.bulk.per_key_sums", 1)),
  };
  return v;
}

}  // namespace strata::cuda::lab
