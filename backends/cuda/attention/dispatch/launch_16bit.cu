// Launcher of the bf16/f16 tensor-core attention kernels (sm90/kernel_16bit.cuh on
// sm_90a, sm80/kernel_16bit.cuh on mma.sync): turns AttentionArgs into FlashArgs and
// copies q, k or v into scratch when their layout cannot be read in 16-byte
// chunks (rows padded to a multiple of 8 by the pad pass, dispatch/pad_rows.hpp,
// where the columns are contiguous; packed by dispatch/flash_host.hpp's
// strided copy otherwise), picks the configuration by head dim and value
// head dim (dispatch/flash_variants.hpp), splits the keys of small grids over
// more CTAs (wgmma; merged by common/split_merge.cuh), and registers the
// kernels. Calls with M <= 8 query rows (decode) go to the native bf16/f16
// split-KV decode kernel of dispatch/launch_streaming.cu (registered first,
// "cuda.attention.decode_<dt>"). Without sm_90a, head dims over 128 and
// decode-like calls with too few CTAs (too_few_ctas) and 8 < M run the f32
// kernel on f32 copies of the inputs (run_via_f32), as do head dims over
// 256 on any build.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/attention/common/split_merge.cuh"
#include "cuda/attention/dispatch/entry_points.hpp"
#include "cuda/attention/dispatch/flash_host.hpp"
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/attention/dispatch/pad_rows.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/registry.hpp"
#include "strata/tuning.hpp"
#if STRATA_TUNING
#include "cuda/lab/attention/candidates.hpp"
#endif

namespace strata::cuda {
namespace {

using flash_host::any_forced;
using flash_host::chunk_ok;
using flash_host::DeviceScope;
using flash_host::forced;
using flash_host::kOp;
using flash_host::make_flash_args;
using flash_host::Pack;
using flash_host::packed_view;
using flash_host::pick;
using flash_host::piece8_ok;
using flash_host::place;
using flash_host::plan_pack;
using flash_host::round256;
using flash_host::Scratch;
using flash_host::too_few_ctas;

// The mma.sync table of dt; a tuning build appends the lab's candidates.
const std::vector<FlashVariant>& mma_table(DType dt) {
#if STRATA_TUNING
  static const std::vector<FlashVariant> bf16 =
      flash_host::joined(flash_variants_bf16(), lab::mma_candidates(DType::bf16));
  static const std::vector<FlashVariant> f16 =
      flash_host::joined(flash_variants_f16(), lab::mma_candidates(DType::f16));
  return dt == DType::bf16 ? bf16 : f16;
#else
  return dt == DType::bf16 ? flash_variants_bf16() : flash_variants_f16();
#endif
}
const std::vector<FlashVariant>& wgmma_table(DType dt) {
  return (dt == DType::bf16 ? wgmma_tables<__nv_bfloat16>() : wgmma_tables<__half>()).all;
}
// The table of a call with value head dim dv: with the configurations
// whose P V covers only kWgmmaNarrowV columns where dv fits them.
const std::vector<FlashVariant>& wgmma_table(DType dt, std::int64_t dv) {
  if (dv > kWgmmaNarrowV) return wgmma_table(dt);
  return (dt == DType::bf16 ? wgmma_tables<__nv_bfloat16>() : wgmma_tables<__half>()).narrow_v;
}

// The pad pass (dispatch/pad_rows.hpp): q, k or v whose rows are not 16-byte
// chunks are copied with rows padded to a multiple of 8 and run on the
// 16-byte-row configurations, rather than on those reading 8-byte pieces.
// It pays where the copy is small against the attention: at d 100 it won
// on the batched shape and lost on one head of 4096, whose launch and
// scratch are fixed costs against a short call (docs/log/cuda-tuning.md,
// "Head dim 100: pad pass and narrow P·V"). So it runs from 2^30 scores
// (batch x heads x M x N) on. STRATA_FLASH_PAD=0 turns it off, =1 on for
// every call (tests, A/B runs).
bool pad_pass_on(const AttentionArgs& a) {
  const Toggle forced = tuning().flash_pad;
  if (forced != Toggle::automatic) return forced == Toggle::on;
  constexpr double kMinScores = double(std::int64_t(1) << 30);
  return double(a.batch_count()) * double(a.Hq) * double(a.M) * double(a.N) >= kMinScores;
}

std::int64_t query_tiles(const FlashVariant& v, const AttentionArgs& a) {
  return (a.M + v.bm - 1) / v.bm * a.batch_count() * a.Hq;
}

// Split-KV (the wgmma kernel): a grid of fewer CTAs than the GPU holds at
// once leaves SMs idle while each CTA walks every key tile, so the key
// tiles of each tile of rows are cut into as many parts as one wave holds,
// each at least kMinSplitTiles tiles (its prologue, the Q tile and the
// pipeline's fill, amortised), and merged after (common/split_merge.cuh).
// STRATA_FLASH_SPLITS=n forces n splits on every call (tests, tuning).
constexpr std::int64_t kMinSplitTiles = 4;
int choose_splits(const FlashVariant& v, const AttentionArgs& a, int dev) {
  const std::int64_t forced_splits = tuning().flash_splits;
  if (a.N == 0 || a.M == 0) return 1;
  if (forced_splits > 0) return int(std::min<std::int64_t>(forced_splits, kMaxSplits));
  const std::int64_t grid = query_tiles(v, a);
  const std::int64_t slots = std::int64_t(sm_count()) * flash_host::ctas_per_sm(v, dev);
  if (grid >= slots) return 1;
  const std::int64_t key_tiles = (a.N + v.bn - 1) / v.bn;
  const std::int64_t s = std::min(slots / grid, key_tiles / kMinSplitTiles);
  return int(std::clamp<std::int64_t>(s, 1, kMaxSplits));
}

// pieces8: the table may read 8-byte pieces (the wgmma one has
// configurations for d 128 that do), so operands whose rows are only
// 8-byte aligned need no copy (with the pad pass off, or a forced
// configuration that reads pieces).
void run_tiles(const AttentionArgs& a, const std::vector<FlashVariant>& table, int D,
               bool pieces8) {
  const DeviceScope scope(a.out.data);
  const FlashVariant* found = pick(table, D, a.d);
  check(found != nullptr, kOp, "cuda: no tensor-core configuration for d = ", D);
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
  // A configuration that reads 8-byte pieces itself (a forced one) keeps the
  // call; otherwise the pad pass copies the rows, if on.
  const bool by_pieces_ok = any_need && all_pieces && (found->pieces8 || !pad_pass_on(a));
  const FlashVariant* by_pieces =
      by_pieces_ok ? (found->pieces8 ? found : pick(table, D, a.d, true)) : nullptr;
  const bool use_pieces = by_pieces != nullptr;
  if (use_pieces) found = by_pieces;
  // Only the wgmma kernel splits the keys; a grid it cannot split (too few
  // keys) takes the table's small-grid tiles, if any: more CTAs, though
  // each works on fewer rows (docs/log/cuda-tuning.md, "bf16/f16 on
  // wgmma").
  const int splits = found->splits_keys ? choose_splits(*found, a, scope.dev) : 1;
  if (splits == 1 && !forced(found->name) && !use_pieces && query_tiles(*found, a) < sm_count()) {
    const FlashVariant* small = pick(table, D, a.d, false, true);
    if (small) found = small;
  }
  const FlashVariant& v = *found;
  flash_host::prepare(v.kernel, v.threads, v.smem, scope.dev);

  AttnParams merge;  // the split-KV partials and their merge
  merge.a = a;
  merge.group = a.Hq / a.Hkv;
  merge.bh = a.batch_count() * a.Hq;
  merge.splits = splits;
  std::size_t acc_bytes = 0, ml_bytes = 0;
  if (splits > 1) {
    check(merge_blocks(merge) <= 0x7fffffff, kOp, "cuda: too many rows for the merge launch (",
          merge_blocks(merge), ")");
    const std::size_t rows = std::size_t(splits) * std::size_t(merge.bh * a.M);
    acc_bytes = round256(rows * std::size_t(a.dv) * sizeof(float));
    ml_bytes = round256(rows * 2 * sizeof(float));
  }
  // Each copy planned (and its size checked) before the scratch is taken.
  std::size_t total = acc_bytes + ml_bytes;
  PadPlan pads[3];
  bool padded[3] = {false, false, false};
  for (int i = 0; i < 3; ++i) {
    if (use_pieces) need[i] = false;
    if (!need[i]) continue;
    const std::int64_t cols = ops[i]->shape[ops[i]->rank - 1];
    const std::int64_t row = (cols + 7) / 8 * 8;
    packs[i] = plan_pack(*ops[i], 2, row);
    padded[i] = pad_pass_on(a) && plan_pad(packs[i].src, row, pads[i]);
    total += packs[i].bytes;
  }
  Scratch scratch(total, st);
  std::size_t off = acc_bytes + ml_bytes;
  PadJob jobs[3];
  int n_jobs = 0;
  for (int i = 0; i < 3; ++i) {
    if (!need[i]) continue;
    if (padded[i]) {
      packs[i].dst.data = scratch.at(off);
      jobs[n_jobs++] = {pads[i], packs[i].src.data, packs[i].dst.data};
      *ops[i] = packed_view(packs[i], *ops[i]);
    } else {
      *ops[i] = place(packs[i], *ops[i], scratch.at(off), 2, st);
    }
    off += packs[i].bytes;
  }
  pad_rows_async(jobs, n_jobs, st);  // q, k and v in one launch

  FlashArgs f = make_flash_args(w);
  f.o_vec = chunk_ok(w.out, 8);
  f.diag_half = flash_host::diag_half_on();
  if (splits > 1) {
    f.splits = splits;
    f.part_rows = merge.bh * a.M;
    f.part_acc = reinterpret_cast<float*>(scratch.at(0));
    f.part_ml = reinterpret_cast<float*>(scratch.at(acc_bytes));
    merge.part_acc = f.part_acc;
    merge.part_ml = f.part_ml;
  }
  flash_host::launch_query_tiles(v, f, a, st);
  if (splits > 1) {
    const cudaError_t err = a.dtype() == DType::bf16
                                ? launch_split_merge<float, __nv_bfloat16>(merge, st)
                                : launch_split_merge<float, __half>(merge, st);
    if (err != cudaSuccess) throw_cuda_error(err, "split-KV merge", __FILE__, __LINE__);
  }
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
void run_wg_d128(const AttentionArgs& a) { run_tiles(a, wgmma_table(a.dtype(), a.dv), 128, true); }

// Head dims over 128 on wgmma: the d 192 tiles up to 192, the d 256 ones
// beyond; a configuration STRATA_FLASH_VARIANT names as wide as d and dv
// first. 0: none (not sm_90a, or over 256), the call goes through f32.
int wg_wide_dim(const AttentionArgs& a) {
  const std::int64_t need = std::max(a.d, a.dv);
  const std::vector<FlashVariant>& table = wgmma_table(a.dtype());
  for (int D : {192, 256})
    if (need <= D && any_forced(table, D)) return D;
  for (int D : {192, 256})
    if (need <= D && pick(table, D, a.d) != nullptr) return D;
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

const char* supports_tiles(const AttentionArgs& a, int D) {
  if (too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  return a.d <= D && a.dv <= D ? nullptr : flash_host::head_dims_over(D);
}
const char* supports_d64(const AttentionArgs& a) { return supports_tiles(a, 64); }
const char* supports_d128(const AttentionArgs& a) { return supports_tiles(a, 128); }

// The wgmma kernel takes a call its head dim serves, unless this build has
// none (not sm_90a) or STRATA_FLASH_VARIANT forces an mma.sync
// configuration; it splits the keys of grids too small for the GPU itself.
const char* supports_wgmma(const AttentionArgs& a, int D) {
  if (wgmma_table(a.dtype()).empty()) return "not built (needs sm_90a)";
  if (a.d > D || a.dv > D) return flash_host::head_dims_over(D);
  if (any_forced(mma_table(a.dtype()), D)) return "STRATA_FLASH_VARIANT forces mma.sync";
  return nullptr;
}
const char* supports_wg_d64(const AttentionArgs& a) { return supports_wgmma(a, 64); }
const char* supports_wg_d128(const AttentionArgs& a) { return supports_wgmma(a, 128); }
const char* supports_wg_d256(const AttentionArgs& a) {
  if (wgmma_table(a.dtype()).empty()) return "not built (needs sm_90a)";
  if (wg_wide_dim(a) == 0) return "head dims over 256";
  return nullptr;
}

}  // namespace

namespace flash_host {

bool table_16bit_has(const std::string& name) {
  for (const DType dt : {DType::bf16, DType::f16})
    for (const auto* table : {&mma_table(dt), &wgmma_table(dt, kWgmmaNarrowV)})
      for (const FlashVariant& v : *table)
        if (name == v.name) return true;
  return false;
}

}  // namespace flash_host

void register_cuda_flash_mma(Registry& r) {
  // First: the registry takes the first kernel whose supports() accepts.
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.decode_bf16",
                              &attention_bf16_decode, &attention_decode_supports);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.decode_f16",
                              &attention_f16_decode, &attention_decode_supports);
  // Then each dtype's routes in this order, "cuda.attention.<kind>_<dtype>_<dims>";
  // head dims 129-256 (wg_wide_dim) before the f32 route.
  struct Route {
    const char* kind;
    const char* dims;
    void (*run)(const AttentionArgs&);
    const char* (*supports)(const AttentionArgs&);
  };
  static constexpr Route kRoutes[] = {
      {"wgmma", "d64", &run_wg_d64, &supports_wg_d64},
      {"wgmma", "d128", &run_wg_d128, &supports_wg_d128},
      {"mma", "d64", &run_d64, &supports_d64},
      {"mma", "d128", &run_d128, &supports_d128},
      {"wgmma", "d256", &run_wg_d256, &supports_wg_d256},
      {"mma", "via_f32", &run_f32, nullptr},
  };
  for (const DType dt : {DType::bf16, DType::f16})
    for (const Route& k : kRoutes)
      r.add_kernel<AttentionArgs>(kOp, "cuda", dt,
                                  "cuda.attention." + std::string(k.kind) + "_" +
                                      std::string(dtype_name(dt)) + "_" + k.dims,
                                  k.run, k.supports);
}

}  // namespace strata::cuda
