// The host side of softmax_attention's backward on cuda: the workspaces
// (the per-row L and Dw of bwd_params.hpp, from the stream-ordered pool),
// the packed copies the mma kernels need, and the three launches:
//   1. preprocess (preprocess.cuh): L and Dw per query row;
//   2. dK and dV: one CTA per (batch, kv head, key tile), over every q head
//      of its group and every query tile in reach;
//   3. dQ: one CTA per (batch, q head, query tile), over the key tiles.
// Kernels 2 and 3 each recompute P (and dP) from L, so S is computed twice
// where FlashAttention-2 computes it once and sums dQ with atomics: the
// price of gradients with the same bits on every run.
// bf16/f16 with d, dv <= 128 run on the tensor cores (mma_dkdv.cuh,
// mma_dq.cuh); everything else, f32 and f64 included, on FFMA (ffma.cuh).
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "cuda/attention/backward/launchers.hpp"
#include "cuda/attention/dispatch/entry_points.hpp"
#include "cuda/attention/dispatch/flash_host.hpp"
#include "cuda/cuda_check.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {
namespace {

using bwd::BwdParams;
using bwd::kOp;
using flash_host::chunk_ok;
using flash_host::Pack;
using flash_host::round256;
using flash_host::Scratch;

bool is_16bit(DType dt) { return dt == DType::bf16 || dt == DType::f16; }

void run(const AttentionBackwardArgs& g) {
  const AttentionArgs& a = g.fwd;
  const AttentionDeviceScope scope(a.out.data);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const DType dt = g.dtype();
  const bool mma = is_16bit(dt) && a.d <= bwd::kMmaMaxHeadDim && a.dv <= bwd::kMmaMaxHeadDim;
  const int tile = mma ? 0 : bwd::ffma_tile(a, scope.dev);
  check(mma || tile > 0, kOp, "cuda: head dims d = ", a.d, " and dv = ", a.dv, " need ",
        bwd::ffma_smem(a, 8), " bytes of shared memory per block, more than the device has");

  BwdParams p;
  p.g = g;
  p.bh = a.batch_count() * a.Hq;
  p.Mp = (a.M + bwd::kRowPad - 1) / bwd::kRowPad * bwd::kRowPad;
  p.group = a.Hq / a.Hkv;
  p.scale = a.scale;
  p.scale_log2 = float(a.scale * 1.4426950408889634);
  p.base2 = mma;

  // The mma kernels read q, k, v and dout in 16-byte chunks: other layouts
  // (and rows whose length is no multiple of 8) are copied first, rows
  // padded with zeros to a multiple of 8.
  Operand* ops[4] = {&p.g.fwd.q, &p.g.fwd.k, &p.g.fwd.v, &p.g.dout};
  Pack packs[4];
  bool need[4] = {false, false, false, false};
  const std::size_t wsize = dt == DType::f64 ? 8 : 4;
  const std::size_t rows_bytes = round256(std::size_t(p.bh * p.Mp) * wsize);
  std::size_t total = 2 * rows_bytes;
  for (int i = 0; mma && i < 4; ++i) {
    need[i] = !chunk_ok(*ops[i], 8);
    if (!need[i]) continue;
    const std::int64_t cols = ops[i]->shape[ops[i]->rank - 1];
    packs[i] = flash_host::plan_pack(*ops[i], 2, (cols + 7) / 8 * 8);
    total += packs[i].bytes;
  }
  const Scratch scratch(total, st);
  p.L = scratch.at(0);
  p.Dw = scratch.at(rows_bytes);
  std::size_t off = 2 * rows_bytes;
  for (int i = 0; i < 4; ++i) {
    if (!need[i]) continue;
    *ops[i] = flash_host::place(packs[i], *ops[i], scratch.at(off), 2, st);
    off += packs[i].bytes;
  }
  bwd::launch_preprocess(p, st);
  if (mma)
    bwd::launch_mma(p, scope.dev, st);
  else
    bwd::launch_ffma(p, tile, scope.dev, st);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, kOp, __FILE__, __LINE__);
}

}  // namespace

void register_cuda_attention_backward(Registry& r) {
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16})
    r.add_kernel<AttentionBackwardArgs>(
        kOp, "cuda", dt,
        is_16bit(dt) ? std::string("cuda.attention_backward.mma_").append(dtype_name(dt))
                     : std::string("cuda.attention_backward.ffma"),
        &run);
}

}  // namespace strata::cuda
