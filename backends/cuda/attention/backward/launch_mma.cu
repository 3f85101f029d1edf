// Launches the backward's bf16/f16 tensor-core kernels (mma_dkdv.cuh,
// mma_dq.cuh): head dims up to 64 on D = 64 tiles, up to 128 on D = 128 ones.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/attention/backward/launchers.hpp"
#include "cuda/attention/backward/mma_dkdv.cuh"
#include "cuda/attention/backward/mma_dq.cuh"
#include "cuda/cuda_check.hpp"
#include "cuda/runtime/kernel_occupancy.hpp"

namespace strata::cuda::bwd {
namespace {

void prepare(const void* kernel, int threads, std::size_t smem, int dev) {
  check(resident_blocks(kernel, threads, smem, dev) > 0, kOp,
        "cuda: an mma kernel cannot be resident with ", smem, " bytes of shared memory");
}

// dK and dV: <T, D, keys per CTA, queries per step, 16-key blocks per warp,
// stages, K/V fragments in registers, CTAs per SM the registers allow>.
template <class T, int D, int BN, int BM, int MT, int ST, bool KVREG, int MINB>
void run_dkdv(BwdParams p, int dev, cudaStream_t st) {
  static_assert(BM <= kRowPad && kRowPad % BM == 0, "query tiles must divide the row padding");
  const AttentionArgs& a = p.g.fwd;
  if (a.N == 0) return;  // dk and dv are empty
  const std::size_t smem =
      std::size_t(2 * BN + 2 * ST * BM) * D * sizeof(T) + 2 * ST * BM * sizeof(float);
  auto* kernel = &dkdv_mma_kernel<T, D, BN, BM, MT, ST, KVREG, MINB>;
  constexpr int kThreads = kDkdvThreads<BN, MT>;
  prepare(reinterpret_cast<const void*>(kernel), kThreads, smem, dev);
  p.tiles = (a.N + BN - 1) / BN;
  const std::int64_t grid = checked_grid(p.tiles * a.batch_count() * a.Hkv);
  kernel<<<int(grid), kThreads, smem, st>>>(p);
}

// dQ: <T, D, queries per CTA, keys per step, 16-query blocks per warp,
// stages, CTAs per SM the registers allow>.
template <class T, int D, int BM, int BN, int MT, int ST, int MINB>
void run_dq(BwdParams p, int dev, cudaStream_t st) {
  static_assert(BM <= kRowPad && kRowPad % BM == 0, "query tiles must divide the row padding");
  const AttentionArgs& a = p.g.fwd;
  const std::size_t smem = std::size_t(2 * BM + 2 * ST * BN) * D * sizeof(T);
  auto* kernel = &dq_mma_kernel<T, D, BM, BN, MT, ST, MINB>;
  constexpr int kThreads = kDqThreads<BM, MT>;
  prepare(reinterpret_cast<const void*>(kernel), kThreads, smem, dev);
  p.tiles = (a.M + BM - 1) / BM;
  const std::int64_t grid = checked_grid(p.tiles * p.bh);
  kernel<<<int(grid), kThreads, smem, st>>>(p);
}

// One configuration per head dim, picked on the H200 among CTAs of 4 warps
// (docs/log/autograd.md): 16 rows per warp, 32 queries (dK/dV) or keys (dQ)
// per step, the register cap of 3 CTAs per SM at d 64 (more resident warps
// beat holding K and V fragments in registers), 2 CTAs and deeper cp.async
// pipelines at d 128, whose accumulators need the registers.
template <class T>
void run_dt(const BwdParams& p, int dev, cudaStream_t st) {
  const AttentionArgs& a = p.g.fwd;
  if (a.d <= 64 && a.dv <= 64) {
    run_dkdv<T, 64, 64, 32, 1, 2, false, 3>(p, dev, st);
    run_dq<T, 64, 64, 32, 1, 3, 3>(p, dev, st);
  } else {
    run_dkdv<T, 128, 64, 32, 1, 3, false, 2>(p, dev, st);
    run_dq<T, 128, 64, 32, 1, 4, 2>(p, dev, st);
  }
}

}  // namespace

void launch_mma(BwdParams p, int dev, cudaStream_t st) {
  if (p.g.dtype() == DType::bf16)
    run_dt<__nv_bfloat16>(p, dev, st);
  else
    run_dt<__half>(p, dev, st);
}

}  // namespace strata::cuda::bwd
