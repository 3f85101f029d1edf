// Launcher of the f32 TF32 tensor-core attention kernels (sm90/kernel_tf32.cuh
// on sm_90a, sm80/kernel_tf32.cuh on mma.sync):
// packs q, k or v into scratch when their rows cannot be read in 16-byte
// chunks, converts the arguments (dispatch/flash_host.hpp, shared with the
// bf16/f16 launcher), picks the configuration by precision and head dim,
// and registers the kernels, each for one precision.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/attention/dispatch/entry_points.hpp"
#include "cuda/attention/dispatch/flash_host.hpp"
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "strata/registry.hpp"
#if STRATA_TUNING
#include "cuda/lab/attention/candidates.hpp"
#endif

namespace strata::cuda {
namespace {

using flash_host::chunk_ok;
using flash_host::kOp;

constexpr int kF32Chunk = 4;  // f32 elements per 16-byte chunk

// The tables of precision high (x3) or medium: the wgmma kernel's (sm_90a
// builds; empty otherwise) or the mma.sync one's.
// A tuning build appends the lab's mma.sync candidates.
const std::vector<FlashVariant>& table(bool wg, bool x3) {
  if (wg) return x3 ? wgmma_variants_tf32x3() : wgmma_variants_tf32();
#if STRATA_TUNING
  static const std::vector<FlashVariant> high =
      flash_host::joined(flash_variants_tf32x3(), lab::tf32_candidates(true));
  static const std::vector<FlashVariant> medium =
      flash_host::joined(flash_variants_tf32(), lab::tf32_candidates(false));
  return x3 ? high : medium;
#else
  return x3 ? flash_variants_tf32x3() : flash_variants_tf32();
#endif
}

void run(const AttentionArgs& a, bool wg, bool x3, int D) {
  const flash_host::DeviceScope scope(a.out.data);
  const FlashVariant* found = flash_host::pick(table(wg, x3), D, a.d);
  check(found != nullptr, kOp, "cuda: no TF32 configuration for d = ", D);
  const FlashVariant& v = *found;
  flash_host::prepare(v.kernel, v.threads, v.smem, scope.dev);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);

  AttentionArgs w = a;
  Operand* ops[3] = {&w.q, &w.k, &w.v};
  flash_host::Pack packs[3];
  bool need[3];
  std::size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    need[i] = !chunk_ok(*ops[i], kF32Chunk);
    if (!need[i]) continue;
    const std::int64_t cols = ops[i]->shape[ops[i]->rank - 1];
    packs[i] = flash_host::plan_pack(*ops[i], 4, (cols + kF32Chunk - 1) / kF32Chunk * kF32Chunk);
    total += packs[i].bytes;
  }
  const flash_host::Scratch scratch(total, st);
  std::size_t off = 0;
  for (int i = 0; i < 3; ++i) {
    if (!need[i]) continue;
    *ops[i] = flash_host::place(packs[i], *ops[i], scratch.at(off), 4, st);
    off += packs[i].bytes;
  }

  FlashArgs f = flash_host::make_flash_args(w);
  f.o_vec = chunk_ok(w.out, kF32Chunk);
  flash_host::launch_query_tiles(v, f, a, st);
}

// nullptr when the kernel for precision `p` and head dims <= D serves `a`.
const char* supports(const AttentionArgs& a, Precision p, int D) {
  if (a.dtype() != DType::f32) return "only f32";
  if (a.precision != p) return "another precision was asked for";
  if (a.mask.data && a.mask.dtype != DType::boolean && a.mask.dtype != DType::f32)
    return "mask must be bool or f32";
  if (flash_host::too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  if (a.d > D || a.dv > D) return flash_host::head_dims_over(D);
  return nullptr;
}
// The wgmma kernel, faster than mma.sync at both precisions and head dims
// (docs/log/cuda-tuning.md, "f32 on wgmma: TF32 and 3xTF32"), takes its
// precision's calls unless this build has none (not sm_90a) or
// STRATA_FLASH_VARIANT names an mma.sync configuration of that head dim.
const char* supports_wg(const AttentionArgs& a, Precision p, int D) {
  const bool x3 = p == Precision::high;
  if (table(true, x3).empty()) return "not built (needs sm_90a)";
  if (flash_host::any_forced(table(false, x3), D)) return "STRATA_FLASH_VARIANT forces mma.sync";
  return supports(a, p, D);
}
// One registered kernel: the wgmma (WG) or mma.sync configurations of
// precision high (X3) or medium for head dims up to D.
template <bool WG, bool X3, int D>
void run_kernel(const AttentionArgs& a) {
  run(a, WG, X3, D);
}
template <bool WG, bool X3, int D>
const char* supports_kernel(const AttentionArgs& a) {
  const Precision p = X3 ? Precision::high : Precision::medium;
  return WG ? supports_wg(a, p, D) : supports(a, p, D);
}
template <bool WG, bool X3, int D>
void add_kernel(Registry& r) {
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f32,
                              std::string("cuda.attention.") + (WG ? "wgmma" : "mma") +
                                  (X3 ? "_tf32x3_d" : "_tf32_d") + std::to_string(D),
                              &run_kernel<WG, X3, D>, &supports_kernel<WG, X3, D>);
}

}  // namespace

namespace flash_host {

bool table_tf32_has(const std::string& name) {
  for (const bool wg : {false, true})
    for (const bool x3 : {false, true})
      for (const FlashVariant& v : table(wg, x3))
        if (name == v.name) return true;
  return false;
}

}  // namespace flash_host

void register_cuda_flash_tf32(Registry& r) {
  // Ahead of cuda.attention.streaming: the registry takes the first kernel
  // whose supports() accepts, and these accept only their own precision;
  // wgmma (sm_90a) before mma.sync.
  add_kernel<true, true, 64>(r);
  add_kernel<true, true, 128>(r);
  add_kernel<true, false, 64>(r);
  add_kernel<true, false, 128>(r);
  add_kernel<false, true, 64>(r);
  add_kernel<false, true, 128>(r);
  add_kernel<false, false, 64>(r);
  add_kernel<false, false, 128>(r);
}

}  // namespace strata::cuda
