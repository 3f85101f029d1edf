// Launches the backward's bf16/f16 tensor-core kernels (mma_dkdv.cuh,
// mma_dq.cuh): head dims up to 64 on D = 64 tiles, up to 128 on D = 128 ones.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "cuda/attention/backward/launchers.hpp"
#include "cuda/attention/backward/mma_dkdv.cuh"
#include "cuda/attention/backward/mma_dq.cuh"
#include "cuda/attention/backward/mma_old.cuh"
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

using Fn = void (*)(BwdParams, int, cudaStream_t);

// TEMPORARY: the kernels before this branch, as the sweep's baseline.
template <class T, int D, int KN, int KM, bool KVREG, int QM, int QN>
void run_old(BwdParams p, int dev, cudaStream_t st) {
  const AttentionArgs& a = p.g.fwd;
  if (a.N > 0) {
    const std::size_t smem = std::size_t(KN + 2 * KM) * D * 2 * sizeof(T) + 4 * KM * sizeof(float);
    auto* kernel = &old::dkdv_mma_kernel<T, D, KN, KM, KVREG>;
    prepare(reinterpret_cast<const void*>(kernel), KN * 2, smem, dev);
    p.tiles = (a.N + KN - 1) / KN;
    kernel<<<int(checked_grid(p.tiles * a.batch_count() * a.Hkv)), KN * 2, smem, st>>>(p);
  }
  const std::size_t smem = std::size_t(2 * QM + 4 * QN) * D * sizeof(T);
  auto* kernel = &old::dq_mma_kernel<T, D, QM, QN>;
  prepare(reinterpret_cast<const void*>(kernel), QM * 2, smem, dev);
  p.tiles = (a.M + QM - 1) / QM;
  kernel<<<int(checked_grid(p.tiles * p.bh)), QM * 2, smem, st>>>(p);
}

int pick(const char* env, int n) {
  const char* s = std::getenv(env);
  const int i = s ? std::atoi(s) : 0;
  return i >= 0 && i < n ? i : 0;
}

template <class T>
void run_dt(const BwdParams& p, int dev, cudaStream_t st) {
  const AttentionArgs& a = p.g.fwd;
  static const int dk_i = pick("STRATA_BWD_DKDV", 7), dq_i = pick("STRATA_BWD_DQ", 5);
  if (dk_i == 6) {
    if (a.d <= 64 && a.dv <= 64)
      run_old<T, 64, 64, 64, true, 64, 64>(p, dev, st);
    else
      run_old<T, 128, 64, 32, false, 64, 32>(p, dev, st);
    return;
  }
  if (a.d <= 64 && a.dv <= 64) {
    static constexpr Fn dkdv[] = {
        &run_dkdv<T, 64, 64, 32, 1, 2, true, 3>,  &run_dkdv<T, 64, 64, 32, 1, 3, true, 3>,
        &run_dkdv<T, 64, 64, 32, 1, 2, false, 3>, &run_dkdv<T, 64, 64, 32, 1, 2, false, 4>,
        &run_dkdv<T, 64, 64, 16, 1, 2, true, 3>,  &run_dkdv<T, 64, 64, 16, 1, 3, true, 4>};
    static constexpr Fn dq[] = {&run_dq<T, 64, 64, 32, 1, 3, 3>, &run_dq<T, 64, 64, 32, 1, 2, 3>,
                                &run_dq<T, 64, 64, 16, 1, 3, 4>, &run_dq<T, 64, 64, 32, 1, 3, 4>,
                                &run_dq<T, 64, 64, 16, 1, 4, 4>};
    dkdv[dk_i](p, dev, st);
    dq[dq_i](p, dev, st);
  } else {
    static constexpr Fn dkdv[] = {&run_dkdv<T, 128, 64, 32, 1, 3, false, 2>,
                                  &run_dkdv<T, 128, 64, 16, 1, 3, false, 2>,
                                  &run_dkdv<T, 128, 64, 32, 1, 4, false, 2>};
    static constexpr Fn dq[] = {&run_dq<T, 128, 64, 32, 1, 3, 2>, &run_dq<T, 128, 64, 16, 1, 3, 2>,
                                &run_dq<T, 128, 64, 32, 1, 4, 2>};
    dkdv[dk_i < 3 ? dk_i : 0](p, dev, st);
    dq[dq_i < 3 ? dq_i : 0](p, dev, st);
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
