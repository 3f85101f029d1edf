// Launcher of the bf16/f16 tensor-core attention kernel (flash_mma.cuh):
// turns AttentionArgs into FlashArgs and packs q, k or v into scratch when
// their layout cannot be read in 16-byte chunks (flash_launch_common.hpp,
// shared with the f32 TF32 launcher), picks the configuration by head
// dim, and registers the kernels. Calls with M <= 8 query rows (decode) go
// to the native bf16/f16 split-KV decode kernel of attention_launch.cu
// (registered first, "cuda.attention.decode_<dt>"); head dims over 128, and
// decode-like calls with too few CTAs (too_few_ctas) and 8 < M, run the f32
// kernel on f32 copies of the inputs (run_via_f32), unless
// STRATA_FLASH_VARIANT names one of the wgmma d 192 / d 256 candidates.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/attention/flash_launch_common.hpp"
#include "cuda/attention/flash_mma.hpp"
#include "cuda/attention/flash_mma_variants.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {
namespace {

using flash_host::chunk_ok;
using flash_host::DeviceScope;
using flash_host::forced;
using flash_host::kOp;
using flash_host::make_flash_args;
using flash_host::Pack;
using flash_host::piece8_ok;
using flash_host::place;
using flash_host::plan_pack;
using flash_host::round256;
using flash_host::Scratch;
using flash_host::too_few_ctas;

const std::vector<FlashVariant>& mma_table(DType dt) {
  return dt == DType::bf16 ? flash_variants_bf16() : flash_variants_f16();
}
const std::vector<FlashVariant>& wgmma_table(DType dt) {
  return dt == DType::bf16 ? wgmma_variants_bf16() : wgmma_variants_f16();
}

// The q/k head dim a configuration serves (FlashVariant::qk_cols, 0: D).
std::int64_t qk_cols(const FlashVariant& v) { return v.qk_cols > 0 ? v.qk_cols : v.D; }

// STRATA_FLASH_VARIANT (flash_host::forced) picks a configuration of the
// call's head dim (one whose S covers q/k head dim d); otherwise the default
// one. nullptr: none in the table.
const FlashVariant* pick(const std::vector<FlashVariant>& table, int D, std::int64_t d) {
  const FlashVariant* best = nullptr;
  for (const FlashVariant& v : table) {
    if (v.D != D) continue;
    if (forced(v.name) && d <= qk_cols(v)) return &v;
    if (v.is_default && !best) best = &v;
  }
  return best;
}

bool any_forced(const std::vector<FlashVariant>& table, int D) {
  for (const FlashVariant& v : table)
    if (v.D == D && forced(v.name)) return true;
  return false;
}

// A default whose grid has fewer CTAs than the device has SMs leaves some
// idle: the table's small_grid configuration of that head dim, if any,
// takes the call (one head of 8192 at d 128: 202 -> 282 TFLOP/s, H200).
const FlashVariant* small_grid_choice(const std::vector<FlashVariant>& table, int D,
                                      const FlashVariant& chosen, const AttentionArgs& a, int dev) {
  int sms = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
    return &chosen;
  const std::int64_t grid = (a.M + chosen.bm - 1) / chosen.bm * a.batch_count() * a.Hq;
  if (grid >= sms) return &chosen;
  for (const FlashVariant& v : table)
    if (v.D == D && v.small_grid) return &v;
  return &chosen;
}

// The table's configuration of head dim D that reads 8-byte pieces.
const FlashVariant* pieces8_choice(const std::vector<FlashVariant>& table, int D) {
  for (const FlashVariant& v : table)
    if (v.D == D && v.pieces8) return &v;
  return nullptr;
}

// pieces8: the table may read 8-byte pieces (the wgmma one has a
// configuration for d 128 that does), so operands whose rows are only
// 8-byte aligned need no packed copy.
void run_tiles(const AttentionArgs& a, const std::vector<FlashVariant>& table, int D,
               bool pieces8) {
  const DeviceScope scope(a.out.data);
  const FlashVariant* found = pick(table, D, a.d);
  check(found != nullptr, kOp, "cuda: no tensor-core configuration for d = ", D);
  if (!forced(found->name)) found = small_grid_choice(table, D, *found, a, scope.dev);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);

  AttentionArgs w = a;
  Operand* ops[3] = {&w.q, &w.k, &w.v};
  Pack packs[3];
  bool need[3];
  bool any_need = false, all_pieces = pieces8;
  for (int i = 0; i < 3; ++i) {
    need[i] = !chunk_ok(*ops[i], 8);
    any_need = any_need || need[i];
    all_pieces = all_pieces && piece8_ok(*ops[i]);
  }
  // A configuration that reads 8-byte pieces itself (a forced one) keeps the call.
  const FlashVariant* by_pieces =
      any_need && all_pieces ? (found->pieces8 ? found : pieces8_choice(table, D)) : nullptr;
  const bool use_pieces = by_pieces != nullptr;
  if (use_pieces) found = by_pieces;
  const FlashVariant& v = *found;
  flash_host::prepare(v.kernel, v.smem, scope.dev);
  std::size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    if (use_pieces) need[i] = false;
    if (!need[i]) continue;
    const std::int64_t cols = ops[i]->shape[ops[i]->rank - 1];
    packs[i] = plan_pack(*ops[i], 2, (cols + 7) / 8 * 8);
    total += packs[i].bytes;
  }
  Scratch scratch(total, st);
  std::size_t off = 0;
  for (int i = 0; i < 3; ++i) {
    if (!need[i]) continue;
    *ops[i] = place(packs[i], *ops[i], scratch.at(off), 2, st);
    off += packs[i].bytes;
  }

  FlashArgs f = make_flash_args(w);
  f.o_vec = chunk_ok(w.out, 8);
  flash_host::launch_query_tiles(v, f, a, st);
}

template <class From, class To>
__global__ void convert_kernel(const From* src, To* dst, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = To(float(src[i]));
}
template <class From, class To>
void convert(const void* src, void* dst, std::int64_t n, cudaStream_t st) {
  if (n == 0) return;
  const int blocks = int(std::min<std::int64_t>((n + 255) / 256, 4096));
  convert_kernel<From, To>
      <<<blocks, 256, 0, st>>>(static_cast<const From*>(src), static_cast<To*>(dst), n);
  CUDA_CHECK_LAUNCH();
}

std::int64_t elements(const Pack& p) {
  std::int64_t n = 1;
  for (int i = 0; i < p.src.rank; ++i) n *= p.src.shape[i];
  return n;
}

// Head dims the tensor-core kernel does not serve: q, k, v (and a float
// mask) are copied row-major in T, widened to f32, the f32 kernel writes an
// f32 out, which is rounded back into out's layout. lse is f32 already.
template <class T>
void run_via_f32(const AttentionArgs& a) {
  const DeviceScope scope(a.out.data);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  AttentionArgs w = a;
  const bool float_mask = a.mask.data && a.mask.dtype != DType::boolean;
  Operand* ins[4] = {&w.q, &w.k, &w.v, &w.mask};
  const int n_in = float_mask ? 4 : 3;
  Pack packs[4], out_pack;
  std::size_t total = 0;
  for (int i = 0; i < n_in; ++i) {
    const Operand& x = *ins[i];
    packs[i] = plan_pack(x, sizeof(T), x.shape[x.rank - 1]);
    total += packs[i].bytes + round256(std::size_t(elements(packs[i])) * 4);
  }
  out_pack = plan_pack(a.out, sizeof(T), a.out.shape[a.out.rank - 1]);
  const std::int64_t n_out = elements(out_pack);
  total += out_pack.bytes + round256(std::size_t(n_out) * 4);
  Scratch scratch(total, st);
  std::size_t off = 0;
  for (int i = 0; i < n_in; ++i) {
    Operand narrow = place(packs[i], *ins[i], scratch.at(off), sizeof(T), st);
    off += packs[i].bytes;
    const std::int64_t n = elements(packs[i]);
    convert<T, float>(narrow.data, scratch.at(off), n, st);
    narrow.data = scratch.at(off);
    narrow.dtype = DType::f32;
    *ins[i] = narrow;
    off += round256(std::size_t(n) * 4);
  }
  // out in f32, row-major (out has no broadcast dims).
  Operand out32 = a.out;
  out32.dtype = DType::f32;
  out32.data = scratch.at(off + out_pack.bytes);
  for (int i = 0; i < out32.rank; ++i) out32.strides[i] = out_pack.dst.strides[i];
  w.out = out32;
  attention_f32(w);
  // Round into a row-major T copy, then scatter into out's layout.
  convert<float, T>(out32.data, scratch.at(off), n_out, st);
  Operand packed = out32;
  packed.dtype = a.out.dtype;
  packed.data = scratch.at(off);
  strided_copy_async(a.out, packed, sizeof(T), st);
  CUDA_CHECK_LAUNCH();
}

void run_d64(const AttentionArgs& a) { run_tiles(a, mma_table(a.dtype()), 64, false); }
void run_d128(const AttentionArgs& a) { run_tiles(a, mma_table(a.dtype()), 128, false); }
void run_wg_d64(const AttentionArgs& a) { run_tiles(a, wgmma_table(a.dtype()), 64, true); }
void run_wg_d128(const AttentionArgs& a) { run_tiles(a, wgmma_table(a.dtype()), 128, true); }

// Head dims over 128 on wgmma are candidates only (docs/cuda-tuning.md,
// "Candidates for the next run"): the head dim (192 or 256) of the first
// configuration STRATA_FLASH_VARIANT names that is as wide as d and dv; 0:
// none, the call goes through f32.
int wg_wide_dim(const AttentionArgs& a) {
  const std::int64_t need = std::max(a.d, a.dv);
  for (int D : {192, 256})
    if (need <= D && any_forced(wgmma_table(a.dtype()), D)) return D;
  return 0;
}
void run_wg_d256(const AttentionArgs& a) {
  run_tiles(a, wgmma_table(a.dtype()), wg_wide_dim(a), true);
}
void run_f32(const AttentionArgs& a) {
  if (a.dtype() == DType::bf16)
    run_via_f32<__nv_bfloat16>(a);
  else
    run_via_f32<__half>(a);
}

std::string supports_tiles(const AttentionArgs& a, int D) {
  if (too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  return a.d <= D && a.dv <= D ? "" : "head dims over " + std::to_string(D);
}
std::string supports_d64(const AttentionArgs& a) { return supports_tiles(a, 64); }
std::string supports_d128(const AttentionArgs& a) { return supports_tiles(a, 128); }

// The wgmma kernel takes a call its head dim serves, unless this build has
// none (not sm_90a) or STRATA_FLASH_VARIANT forces an mma.sync configuration.
std::string supports_wgmma(const AttentionArgs& a, int D) {
  if (pick(wgmma_table(a.dtype()), D, a.d) == nullptr) return "not built (needs sm_90a)";
  if (any_forced(mma_table(a.dtype()), D)) return "STRATA_FLASH_VARIANT forces mma.sync";
  return supports_tiles(a, D);
}
std::string supports_wg_d64(const AttentionArgs& a) { return supports_wgmma(a, 64); }
std::string supports_wg_d128(const AttentionArgs& a) { return supports_wgmma(a, 128); }
std::string supports_wg_d256(const AttentionArgs& a) {
  if (wgmma_table(a.dtype()).empty()) return "not built (needs sm_90a)";
  if (too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  if (wg_wide_dim(a) == 0)
    return "a candidate, not a default: STRATA_FLASH_VARIANT names no wgmma d192/d256 "
           "configuration for head dims up to " +
           std::to_string(std::max(a.d, a.dv));
  return "";
}

}  // namespace

void register_cuda_flash_mma(Registry& r) {
  // First: the registry takes the first kernel whose supports() accepts.
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.decode_bf16",
                              &attention_bf16_decode, &attention_decode_supports);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.decode_f16",
                              &attention_f16_decode, &attention_decode_supports);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.wgmma_bf16_d64",
                              &run_wg_d64, &supports_wg_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.wgmma_bf16_d128",
                              &run_wg_d128, &supports_wg_d128);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_d64", &run_d64,
                              &supports_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_d128", &run_d128,
                              &supports_d128);
  // Candidates (wg_wide_dim): after every default, before the f32 route.
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.wgmma_bf16_d256",
                              &run_wg_d256, &supports_wg_d256);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_via_f32",
                              &run_f32);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.wgmma_f16_d64", &run_wg_d64,
                              &supports_wg_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.wgmma_f16_d128",
                              &run_wg_d128, &supports_wg_d128);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_d64", &run_d64,
                              &supports_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_d128", &run_d128,
                              &supports_d128);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.wgmma_f16_d256",
                              &run_wg_d256, &supports_wg_d256);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_via_f32", &run_f32);
}

}  // namespace strata::cuda
