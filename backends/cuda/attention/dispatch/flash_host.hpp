#pragma once
// Host helpers shared by the tensor-core attention launchers
// (dispatch/launch_16bit.cu for bf16/f16, dispatch/launch_tf32.cu for f32 in TF32):
// the conversion from AttentionArgs to FlashArgs (make_flash_args, the one
// place that reads the front end's struct for these kernels), packing of
// layouts that 16-byte chunks cannot read, the device scope, stream-ordered
// scratch, the one-time shared-memory opt-in and STRATA_FLASH_VARIANT.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cuda/attention/common/flash_args.hpp"
#include "cuda/attention/dispatch/device_scope.hpp"
#include "cuda/attention/dispatch/flash_variants.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/runtime/kernel_occupancy.hpp"
#include "cuda/strided_copy.hpp"
#include "cuda/tuning_build.hpp"
#include "strata/attention_args.hpp"
#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda::flash_host {

inline constexpr const char* kOp = "softmax_attention";

// A supports() reason for head dims over a kernel's D (static strings: the
// registry builds none while it picks a kernel).
inline const char* head_dims_over(int D) {
  switch (D) {
    case 64:
      return "head dims over 64";
    case 128:
      return "head dims over 128";
    case 192:
      return "head dims over 192";
    default:
      return "head dims over 256";
  }
}

// The conversion from the front end's struct. q, k and v must already be
// readable in 16-byte chunks (the launchers pack them first).
inline FlashArgs make_flash_args(const AttentionArgs& a) {
  FlashArgs f;
  f.q = a.q.data;
  f.k = a.k.data;
  f.v = a.v.data;
  f.out = a.out.data;
  f.lse = static_cast<float*>(a.lse.data);
  f.mask = a.mask.data;
  f.mask_kind = !a.mask.data ? 0 : a.mask.dtype == DType::boolean ? 1 : 2;
  // Batch strides through attn::batch_offset (flat index of one step along
  // dim i), so that where the operands keep their batch dims stays the
  // front end's business.
  f.batch_rank = a.batch_rank;
  std::int64_t step = 1;
  for (int i = a.batch_rank - 1; i >= 0; --i) {
    f.batch_shape[i] = a.batch_shape[i];
    if (a.batch_shape[i] > 1) {
      f.q_bs[i] = attn::batch_offset(a.q, step);
      f.k_bs[i] = attn::batch_offset(a.k, step);
      f.v_bs[i] = attn::batch_offset(a.v, step);
      f.o_bs[i] = attn::batch_offset(a.out, step);
      f.l_bs[i] = attn::batch_offset(a.lse, step);
      f.mk_bs[i] = attn::batch_offset(a.mask, step);
    }
    step *= a.batch_shape[i];
  }
  f.q_hs = attn::head_stride(a.q);
  f.q_ms = attn::row_stride(a.q);
  f.k_hs = attn::head_stride(a.k);
  f.k_ns = attn::row_stride(a.k);
  f.v_hs = attn::head_stride(a.v);
  f.v_ns = attn::row_stride(a.v);
  f.o_hs = attn::head_stride(a.out);
  f.o_ms = attn::row_stride(a.out);
  f.o_ds = attn::col_stride(a.out);
  f.l_hs = attn::head_stride(a.lse);
  f.l_ms = attn::row_stride(a.lse);
  f.mk_hs = attn::head_stride(a.mask);
  f.mk_ms = attn::row_stride(a.mask);
  f.mk_ns = attn::col_stride(a.mask);
  f.Hq = a.Hq;
  f.group = a.Hq / a.Hkv;
  f.M = a.M;
  f.N = a.N;
  f.d = int(a.d);
  f.dv = int(a.dv);
  f.has_band = a.has_band();
  f.band_lo = a.band_lo;
  f.band_hi = a.band_hi;
  f.scale_log2 = float(a.scale * 1.4426950408889634);
  return f;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// Rows of x can be moved in 16-byte chunks of `elems` elements: aligned
// base, unit last-dim stride, the row length and every other stride
// multiples of `elems` (8 for bf16/f16, 4 for f32).
inline bool chunk_ok(const Operand& x, int elems) {
  const int r = x.rank;
  if (!aligned16(x.data) || x.strides[r - 1] != 1 || x.shape[r - 1] % elems) return false;
  for (int i = 0; i < r - 1; ++i)
    if (x.shape[i] > 1 && x.strides[i] % elems) return false;
  return true;
}

// Rows of a 16-bit x can be moved in 8-byte pieces (4 elements): 8-byte
// aligned base, unit last-dim stride, the row length and every other stride
// multiples of 4 (head dims such as 100, whose rows are 200 bytes).
inline bool piece8_ok(const Operand& x) {
  const int r = x.rank;
  if ((reinterpret_cast<std::uintptr_t>(x.data) & 7u) != 0 || x.strides[r - 1] != 1 ||
      x.shape[r - 1] % 4)
    return false;
  for (int i = 0; i < r - 1; ++i)
    if (x.shape[i] > 1 && x.strides[i] % 4) return false;
  return true;
}

inline std::size_t round256(std::size_t n) { return (n + 255) / 256 * 256; }

// A row-major copy of operand x: broadcast (stride-0) dims stay stride 0
// and are copied once; rows are padded to `row` elements (zeros).
struct Pack {
  Operand src, dst;  // dst.data set by place()
  std::size_t bytes = 0;
  bool zero = false;  // padding columns to zero first
};
inline Pack plan_pack(const Operand& x, std::size_t isz, std::int64_t row) {
  Pack p;
  p.src = x;
  const int r = x.rank;
  for (int i = 0; i < r - 1; ++i)
    if (x.strides[i] == 0) p.src.shape[i] = 1;
  p.dst = p.src;
  std::int64_t step = row;
  p.dst.strides[r - 1] = 1;
  for (int i = r - 2; i >= 0; --i) {
    p.dst.strides[i] = step;
    step *= p.src.shape[i];
  }
  p.bytes = round256(std::size_t(step) * isz);
  p.zero = row != x.shape[r - 1];
  return p;
}
// The operand the kernels read in place of x once p.dst (data set) holds
// its copy: x's broadcast dims keep stride 0.
inline Operand packed_view(const Pack& p, const Operand& x) {
  Operand y = x;
  y.data = p.dst.data;
  for (int i = 0; i < x.rank; ++i) y.strides[i] = x.strides[i] == 0 ? 0 : p.dst.strides[i];
  return y;
}
// Copies x into `at` on st and returns the operand the kernels read.
inline Operand place(Pack& p, const Operand& x, void* at, std::size_t isz, cudaStream_t st) {
  p.dst.data = at;
  if (p.zero) CUDA_CHECK(cudaMemsetAsync(at, 0, p.bytes, st));
  strided_copy_async(p.dst, p.src, isz, st);
  return packed_view(p, x);
}

// Makes out's device current for the call and restores the caller's.
using DeviceScope = AttentionDeviceScope;

// Heads per chunk of the longest-first block order under a band
// (flash_block_tile): as many heads as have their K and V within 32 MiB of
// L2 (of the H200's 50), at most 16: the best chunk at d 64 and at d 128 of
// those measured; many more heads than fit in L2 lose to head-major order
// (docs/log/cuda-tuning.md, "Causal block order"). STRATA_FLASH_LPT=<g>
// forces g (0: head-major) in tuning runs.
inline int lpt_heads(const AttentionArgs& a, std::size_t isz) {
  static const int forced = [] {
    const std::int64_t n = tuning().flash_lpt_heads;
    check(n <= 1 << 20, kOp, "STRATA_FLASH_LPT is ", n,
          "; expected a number of heads from 0 to 2^20");
    return int(n);
  }();
  if (forced >= 0) return forced;
  const double per_head = double(a.N) * double(a.d + a.dv) * double(isz);
  const double fit = double(32 << 20) / (per_head > 1 ? per_head : 1);
  return fit >= 16 ? 16 : fit >= 1 ? int(fit) : 1;
}

// The wgmma d 64 64x128 kernel computes a last key tile whose keys
// [64, 128) are masked for all its rows (every other diagonal tile under
// causal attention) over its first 64 keys only (FlashArgs::diag_half;
// docs/log/cuda-tuning.md, "Diagonal half tiles").
// STRATA_FLASH_DIAG_HALF=0 turns it off for A/B runs; read once per
// process; "1" or unset: on.
inline bool diag_half_on() { return tuning().flash_diag_half; }

// Launches v with one block per (query tile of v.bm rows, batch, head) and
// reports a launch error under v's name.
inline void launch_query_tiles(const FlashVariant& v, FlashArgs f, const AttentionArgs& a,
                               cudaStream_t st) {
  f.m_tiles = (a.M + v.bm - 1) / v.bm;
  f.bh_count = a.batch_count() * a.Hq;
  f.lpt_heads = lpt_heads(a, itemsize(a.dtype()));
  const std::int64_t grid = f.m_tiles * a.batch_count() * a.Hq * f.splits;
  check(grid <= 0x7fffffff, kOp, "cuda: problem too large for one launch (", grid, " blocks)");
  v.launch(f, int(grid), v.smem, st);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, v.name, __FILE__, __LINE__);
}

// A table and, after it, more configurations (a tuning build's candidates).
inline std::vector<FlashVariant> joined(const std::vector<FlashVariant>& table,
                                        const std::vector<FlashVariant>& more) {
  std::vector<FlashVariant> all = table;
  all.insert(all.end(), more.begin(), more.end());
  return all;
}

// Whether a configuration of this build's tables carries the name: the
// bf16/f16 ones (dispatch/launch_16bit.cu) and the TF32 ones
// (dispatch/launch_tf32.cu), a tuning build's candidates included.
bool table_16bit_has(const std::string& name);
bool table_tf32_has(const std::string& name);

// The names STRATA_FLASH_VARIANT lists must be configurations of this
// build: in a build without the lab's candidates, a name no table holds is
// taken for one of them, an error that says how to build them
// (tuning_build.hpp); in a tuning build, for a name that does not exist.
// wgmma names pass in builds without sm_90a, whose wgmma tables are empty.
inline void check_forced_names() {
  static const bool checked = [] {
    for (const std::string& n : tuning().flash_variants) {
      if (table_16bit_has(n) || table_tf32_has(n)) continue;
#if !defined(STRATA_CUDA_WGMMA)
      if (n.rfind("wgmma.", 0) == 0) continue;
#endif
      require_tuning_build("STRATA_FLASH_VARIANT", n);
      fail(kOp, "cuda: STRATA_FLASH_VARIANT names ", n,
           ", which is no tensor-core attention configuration");
    }
    return true;
  }();
  (void)checked;
}

// STRATA_FLASH_VARIANT=<name>[,<name>...] (tuning runs) forces the listed
// configurations; otherwise each launcher takes its default.
inline bool forced(const char* name) {
  check_forced_names();
  for (const std::string& n : tuning().flash_variants)
    if (n == name) return true;
  return false;
}

// The q/k head dim a configuration serves (FlashVariant::qk_cols, 0: D).
inline std::int64_t qk_cols(const FlashVariant& v) { return v.qk_cols > 0 ? v.qk_cols : v.D; }

// The configuration of head dim D in a launcher's table for a call of q/k
// head dim d: the one STRATA_FLASH_VARIANT (forced) names, if its S covers
// d (and it reads 8-byte pieces where pieces8 asks for them); otherwise,
// among the defaults with the given flags (reads 8-byte pieces, small
// grid), the narrowest S that covers d: the wgmma d 128 kernel also comes
// with S over 80, 96 and 112 columns, each faster than the full S on its
// head dims (docs/log/cuda-tuning.md, "Head dims other than 64 and 128").
// nullptr: none in the table.
inline const FlashVariant* pick(const std::vector<FlashVariant>& table, int D, std::int64_t d,
                                bool pieces8 = false, bool small_grid = false) {
  const FlashVariant* best = nullptr;
  for (const FlashVariant& v : table) {
    if (v.D != D || d > qk_cols(v)) continue;
    if (forced(v.name) && (v.pieces8 || !pieces8)) return &v;
    if (!v.is_default || v.pieces8 != pieces8 || v.small_grid != small_grid) continue;
    if (!best || qk_cols(v) < qk_cols(*best)) best = &v;
  }
  return best;
}

// Whether STRATA_FLASH_VARIANT names a configuration of head dim D in table.
inline bool any_forced(const std::vector<FlashVariant>& table, int D) {
  for (const FlashVariant& v : table)
    if (v.D == D && forced(v.name)) return true;
  return false;
}

// Raises the dynamic shared-memory limit of `kernel` once per device.
inline void prepare(const void* kernel, int threads, std::size_t smem, int dev) {
  (void)resident_blocks(kernel, threads, smem, dev);
}

// CTAs of v one SM holds at once (the occupancy calculator, once per
// kernel and device, counting the opted-in shared memory); at least 1.
inline int ctas_per_sm(const FlashVariant& v, int dev) {
  const int n = resident_blocks(v.kernel, v.threads, v.smem, dev);
  return n > 0 ? n : 1;
}

// Scratch from the stream-ordered pool, freed (in stream order) on scope exit.
struct Scratch {
  void* p = nullptr;
  cudaStream_t st;
  Scratch(std::size_t bytes, cudaStream_t s) : st(s) {
    if (bytes) CUDA_CHECK(cudaMallocAsync(&p, bytes, st));
  }
  ~Scratch() {
    if (p) (void)cudaFreeAsync(p, st);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* at(std::size_t off) const { return static_cast<char*>(p) + off; }
};

// Decode-like calls: a handful of query rows against many keys in so few
// CTAs that most SMs idle while each CTA walks every key tile (the
// mma.sync and TF32 kernels have no split-KV); the split-KV kernels of
// dispatch/launch_streaming.cu serve them better.
inline bool too_few_ctas(const AttentionArgs& a) {
  constexpr std::int64_t kMinCtas = 64, kMinKeys = 16384, kRows = 64;
  const std::int64_t ctas = a.batch_count() * a.Hq * ((a.M + kRows - 1) / kRows);
  return ctas < kMinCtas && a.N >= kMinKeys;
}

}  // namespace strata::cuda::flash_host
