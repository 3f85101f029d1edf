// bf16/f16 mma.sync candidates kept for tuning (candidates.hpp): two 16-row
// blocks per warp (MT 2), so that every K and V fragment read from shared
// memory feeds two MMAs instead of one (half the ldmatrix traffic per FLOP)
// for twice the accumulator registers; Q from shared memory where the
// registers run out (".q_shared"). Built (ptxas counts in docs/log/cuda-tuning.md,
// "bf16/f16 on mma.sync") but not timed yet; the levers named for the
// mma.sync path, which runs where wgmma does not (below sm_90a, or forced).
// Compiled only in a tuning build.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/attention/sm80/configs_16bit.cuh"
#include "cuda/lab/attention/candidates.hpp"

namespace strata::cuda::lab {
namespace {

template <class T>
std::vector<FlashVariant> configs(DType dt) {
  // <T, D, BM, BN, STAGES, MT (16-row blocks per warp), Q fragments, MIN_BLOCKS>
  return {
      candidate(make_flash_variant<T, 64, 128, 32, 2, 2, kQInRegisters, 2>(
          "mma.d64.128x32.2_stages.32_rows_per_warp", dt)),
      candidate(make_flash_variant<T, 64, 128, 64, 2, 2, kQInShared, 2>(
          "mma.d64.128x64.2_stages.32_rows_per_warp.q_shared", dt)),
      candidate(make_flash_variant<T, 128, 128, 32, 2, 2, kQInShared, 1>(
          "mma.d128.128x32.2_stages.32_rows_per_warp.q_shared", dt)),
  };
}

}  // namespace

const std::vector<FlashVariant>& mma_candidates(DType dt) {
  static const std::vector<FlashVariant> bf16 = configs<__nv_bfloat16>(DType::bf16);
  static const std::vector<FlashVariant> f16 = configs<__half>(DType::f16);
  return dt == DType::bf16 ? bf16 : f16;
}

}  // namespace strata::cuda::lab
