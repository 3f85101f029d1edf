// Launches the backward's bf16/f16 tensor-core kernels (mma.cuh): head dims
// up to 64 on D = 64 tiles, up to 128 on D = 128 ones. At D = 128 the tiles
// are narrower (32 queries per dK/dV step, 32 keys per dQ step) and the
// dK/dV kernel reads K and V fragments from shared memory at each step, to
// keep the accumulators in registers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/launchers.hpp"
#include "cuda/attention/backward/mma.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/runtime/kernel_occupancy.hpp"

namespace strata::cuda::bwd {
namespace {

constexpr const char* kOp = "softmax_attention_backward";

std::int64_t checked_grid(std::int64_t blocks) {
  check(blocks <= 0x7fffffff, kOp, "cuda: problem too large for one launch (", blocks, " blocks)");
  return blocks;
}

void prepare(const void* kernel, int threads, std::size_t smem, int dev) {
  check(resident_blocks(kernel, threads, smem, dev) > 0, kOp,
        "cuda: an mma kernel cannot be resident with ", smem, " bytes of shared memory");
}

// <T, D, dK/dV: keys per CTA, queries per step, K/V in registers; dQ:
// queries per CTA, keys per step>
template <class T, int D, int KN, int KM, bool KVREG, int QM, int QN>
void run(BwdParams p, int dev, cudaStream_t st) {
  static_assert(KM <= kRowPad && kRowPad % KM == 0 && QM <= kRowPad && kRowPad % QM == 0,
                "query tiles must divide the workspaces' row padding");
  const AttentionArgs& a = p.g.fwd;
  if (a.N > 0) {  // N = 0: dk and dv are empty
    const std::size_t smem = std::size_t(KN + 2 * KM) * D * 2 * sizeof(T) + 4 * KM * sizeof(float);
    auto* kernel = &dkdv_mma_kernel<T, D, KN, KM, KVREG>;
    prepare(reinterpret_cast<const void*>(kernel), KN * 2, smem, dev);
    p.tiles = (a.N + KN - 1) / KN;
    const std::int64_t grid = checked_grid(p.tiles * a.batch_count() * a.Hkv);
    kernel<<<int(grid), KN * 2, smem, st>>>(p);
  }
  const std::size_t smem = std::size_t(2 * QM + 4 * QN) * D * sizeof(T);
  auto* kernel = &dq_mma_kernel<T, D, QM, QN>;
  prepare(reinterpret_cast<const void*>(kernel), QM * 2, smem, dev);
  p.tiles = (a.M + QM - 1) / QM;
  const std::int64_t grid = checked_grid(p.tiles * p.bh);
  kernel<<<int(grid), QM * 2, smem, st>>>(p);
}

template <class T>
void run_dt(const BwdParams& p, int dev, cudaStream_t st) {
  const AttentionArgs& a = p.g.fwd;
  if (a.d <= 64 && a.dv <= 64)
    run<T, 64, 64, 64, true, 64, 64>(p, dev, st);
  else
    run<T, 128, 64, 32, false, 64, 32>(p, dev, st);
}

}  // namespace

void launch_mma(BwdParams p, int dev, cudaStream_t st) {
  if (p.g.dtype() == DType::bf16)
    run_dt<__nv_bfloat16>(p, dev, st);
  else
    run_dt<__half>(p, dev, st);
}

}  // namespace strata::cuda::bwd
