// The one launcher of the softmax_attention kernels: derives the kernel
// argument, picks the kernel variant (decode or tiled, tile sizes by head
// dims), decides the split of the keys so that small problems still fill
// every SM, and allocates split-KV scratch from the stream-ordered pool.
// The decode kernel merges its own splits (ticket counters, merge_counters
// below); the streaming kernels' splits go to a merge kernel.
// run<T, S>: T the compute type (kernel arithmetic, split-KV partials, lse),
// S the storage type of q, k, v, out and a float mask (S = T for f32 and
// f64; bf16/f16 with T = float on the decode variants).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/attention/common/split_merge.cuh"
#include "cuda/attention/dispatch/device_scope.hpp"
#include "cuda/attention/dispatch/entry_points.hpp"
#include "cuda/attention/dispatch/streaming_variants.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/runtime/kernel_occupancy.hpp"
#include "cuda/strided_copy.hpp"
#include "cuda/tuning_build.hpp"
#include "strata/tuning.hpp"
#if STRATA_TUNING
#include "cuda/lab/attention/candidates.hpp"
#endif

namespace strata::cuda {
namespace {

constexpr int kDecodeMaxRows = 8;  // M at or below this uses the decode kernel

const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = [] {
    std::vector<Variant> all;
    for (const auto* list :
         {&variants_f32(), &variants_f32_pipelined(), &variants_f64(), &variants_16bit()})
      all.insert(all.end(), list->begin(), list->end());
#if STRATA_TUNING
    for (const auto* list : {&lab::ffma_candidates(), &lab::decode_candidates()})
      all.insert(all.end(), list->begin(), list->end());
#endif
    return all;
  }();
  return v;
}

bool serves(const Variant& v, const AttentionArgs& a) {
  if (v.dtype != a.dtype()) return false;
  if (v.max_d && a.d > v.max_d) return false;
  if (v.max_dv && a.dv > v.max_dv) return false;
  if (v.decode && a.M > kDecodeMaxRows) return false;
  // In double: the product of four sizes may pass 2^63.
  if (v.max_work &&
      double(a.batch_count()) * double(a.Hq) * double(a.M) * double(a.N) > double(v.max_work))
    return false;
  return true;
}

// Head-dim bound of a variant: the most specialised one that serves wins.
std::int64_t reach(const Variant& v) {
  constexpr std::int64_t any = std::int64_t(1) << 40;
  return (v.max_d ? v.max_d : any) + (v.max_dv ? v.max_dv : any);
}

// The variant STRATA_CUDA_VARIANT names must be one of this build's: in a
// build without the lab's candidates, a name no table holds is taken for
// one of them, an error that says how to build them (tuning_build.hpp); in
// a tuning build, for a name that does not exist.
void check_forced_name(const std::string& forced) {
  static const bool known = [&] {
    for (const Variant& v : variants())
      if (forced == v.name) return true;
    return false;
  }();
  if (known) return;
  require_tuning_build("STRATA_CUDA_VARIANT", forced);
  fail("softmax_attention", "cuda: STRATA_CUDA_VARIANT=", forced,
       " names no attention kernel variant");
}

// STRATA_CUDA_VARIANT=<name> forces a variant wherever it serves (tuning and
// tests); otherwise: decode when it serves (M <= 8), then the default variant
// with the smallest head-dim bounds, and among those a small-problem variant
// (max_work) where it serves.
const Variant& pick(const AttentionArgs& a) {
  const std::string& forced = tuning().cuda_variant;
  if (!forced.empty()) {
    check_forced_name(forced);
    for (const Variant& v : variants())
      if (serves(v, a) && forced == v.name) return v;
  }
  const Variant* best = nullptr;
  for (const Variant& v : variants()) {
    if (!v.is_default || !serves(v, a)) continue;
    if (!best || (v.decode && !best->decode) ||
        (v.decode == best->decode && reach(v) < reach(*best)) ||
        (v.decode == best->decode && reach(v) == reach(*best) && v.max_work && !best->max_work))
      best = &v;
  }
  if (!best)
    fail("softmax_attention", "cuda: no kernel variant for ", dtype_name(a.dtype()), " d=", a.d,
         " dv=", a.dv);
  return *best;
}

struct DeviceInfo {
  int sms = 0;
  std::size_t smem_optin = 0;
};
// Asked once per device (std::call_once: after the first call a launch
// reads a flag, takes no lock).
constexpr int kMaxDevices = 64;
const DeviceInfo& device_info(int dev) {
  check(dev < kMaxDevices, "softmax_attention", "cuda: device ", dev, " is past the ", kMaxDevices,
        " this build handles");
  static DeviceInfo infos[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  std::call_once(once[dev], [dev] {
    DeviceInfo& di = infos[dev];
    CUDA_CHECK(cudaDeviceGetAttribute(&di.sms, cudaDevAttrMultiProcessorCount, dev));
    int optin = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    di.smem_optin = std::size_t(optin);
    // Keep freed scratch in the pool: each call's split-KV partials then
    // reuse memory instead of mapping it again.
    cudaMemPool_t pool;
    CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev));
    std::uint64_t threshold = UINT64_MAX;
    CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  });
  return infos[dev];
}

// Per (variant, device): raises the dynamic shared-memory limit once and
// returns resident blocks per SM.
int prepare(const Variant& v, int dev) {
  const int n = resident_blocks(v.kernel, v.threads, v.smem, dev);
  check(n > 0, "softmax_attention", "cuda: kernel ", v.name, " cannot be resident (", v.smem,
        " bytes of shared memory)");
  return n;
}

bool aligned(const void* p, std::size_t bytes) {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

// Vector access (vec elements of vec_bytes together: 16 bytes for f32 and
// f64, 8 for four bf16/f16) along dim `unit` of x (its column dim, or its
// row dim for row-contiguous layouts) is safe for every vector: an aligned
// base, unit stride along it, every other stride a multiple of the vector;
// `whole` also asks that the dim's length be one.
bool vec_ok(const Operand& x, int unit, bool whole, int vec, std::size_t vec_bytes) {
  if (!x.data || !aligned(x.data, vec_bytes) || x.strides[unit] != 1) return false;
  if (whole && x.shape[unit] % vec) return false;
  for (int i = 0; i < x.rank; ++i)
    if (i != unit && x.shape[i] > 1 && x.strides[i] % vec) return false;
  return true;
}

// The operand's layout without its padding batch slots, broadcast (stride-0)
// batch and head dims kept at size 1, so that a packed copy does not expand
// them.
StridedLayout source_layout(const AttentionArgs& a, const Operand& x) {
  StridedLayout l{};
  l.data = x.data;
  l.dtype = x.dtype;
  for (int i = kMaxBatchDims - a.batch_rank; i < x.rank; ++i) {
    const bool broadcast = i < attn::kRowDim && x.strides[i] == 0;
    l.shape[l.rank] = broadcast ? 1 : x.shape[i];
    l.strides[l.rank++] = x.strides[i];
  }
  return l;
}

std::int64_t elements(const StridedLayout& l) {
  std::int64_t n = 1;
  for (int i = 0; i < l.rank; ++i) n *= l.shape[i];
  return n;
}

// Copies the operand row-major into `dst` on `st` and points it at the copy;
// broadcast dims keep stride 0.
void pack(const AttentionArgs& a, Operand& x, void* dst, std::size_t isz, cudaStream_t st) {
  const StridedLayout src = source_layout(a, x);
  StridedLayout to = src;
  to.data = dst;
  std::int64_t step = 1;
  for (int i = to.rank - 1; i >= 0; --i) {
    const bool broadcast = i < to.rank - 2 && src.strides[i] == 0;
    to.strides[i] = broadcast ? 0 : step;
    step *= to.shape[i];
  }
  strided_copy_async(to, src, isz, st);
  x.data = dst;
  for (int i = 0; i < to.rank; ++i) x.strides[kMaxBatchDims - a.batch_rank + i] = to.strides[i];
}

// Whether a packed copy pays for an operand the variant's 16-byte path
// cannot read: the copy reads and writes it once, the kernel reads it once
// per query tile and per query head of its group.
bool worth_packing(const Variant& v, const AttnParams& p, bool vec, std::int64_t cols, int vec_n) {
  return v.packs_kv && !vec && cols % vec_n == 0 && p.m_tiles * p.group >= 4;
}

struct Plan {
  const Variant* v;
  AttnParams p;
  std::int64_t grid;
  bool merge;
  bool pack_k, pack_v;  // copy K / V row-major first (worth_packing)
};

template <class T, class S>
Plan make_plan(const AttentionArgs& a, int dev) {
  Plan pl{};
  pl.v = &pick(a);
  const Variant& v = *pl.v;
  AttnParams& p = pl.p;
  p.a = a;
  p.scale_log2 = a.scale * 1.4426950408889634;
  p.group = a.Hq / a.Hkv;
  p.bh = a.batch_count() * a.Hq;
  p.mask_kind = !a.mask.data ? kMaskNone : a.mask.dtype == DType::boolean ? kMaskBool : kMaskFloat;
  // The kernels' vector: Vec<T>::n elements, read in S.
  constexpr int vec = Vec<T>::n;
  constexpr std::size_t vb = vec * sizeof(S);
  using attn::kColDim, attn::kRowDim;
  p.q_vec = vec_ok(a.q, kColDim, true, vec, vb);
  p.k_vec = vec_ok(a.k, kColDim, true, vec, vb);
  p.v_vec = vec_ok(a.v, kColDim, true, vec, vb);
  p.o_vec = vec_ok(a.out, kColDim, true, vec, vb);
  // Row-contiguous layouts: the roles of rows and columns swap (partial row
  // groups are bounds-checked in the kernel, so M, N need not be multiples).
  p.q_tvec = vec_ok(a.q, kRowDim, false, vec, vb);
  p.k_tvec = vec_ok(a.k, kRowDim, false, vec, vb);
  p.v_tvec = vec_ok(a.v, kRowDim, false, vec, vb);

  const DeviceInfo& di = device_info(dev);
  const int occ = prepare(v, dev);
  std::int64_t rows_blocks;  // blocks before splitting the keys
  std::int64_t slots;        // blocks that fit at once
  if (v.decode) {
    p.m_tiles = a.M;
    p.dv_chunks = 1;
    rows_blocks = p.bh * a.M;
    slots = std::int64_t(di.sms) * std::min(occ, v.decode_blocks_per_sm);
  } else {
    p.m_tiles = (a.M + v.bm - 1) / v.bm;
    p.dv_chunks = (a.dv + v.dv_tile - 1) / v.dv_tile;
    rows_blocks = p.bh * p.m_tiles * p.dv_chunks;
    slots = std::int64_t(di.sms) * occ;
  }
  // Split the keys only as far as one wave of blocks allows, and keep at
  // least two key tiles per split; one for the decode kernels, whose
  // per-block latency dominates a short cache: the benchmark model's decode
  // step ran faster with one in f32 and bf16 (docs/log/cuda-tuning.md,
  // "Session 10 trials", the decode table). STRATA_CUDA_DECODE_MIN_TILES=n
  // sets it (tuning).
  static const std::int64_t decode_min_tiles =
      tuning().cuda_decode_min_tiles > 0 ? tuning().cuda_decode_min_tiles : 1;
  const std::int64_t min_tiles = v.decode ? decode_min_tiles : 2;
  const std::int64_t key_tiles = (a.N + v.bn - 1) / v.bn;
  std::int64_t splits = rows_blocks < slots ? slots / rows_blocks : 1;
  splits = std::min<std::int64_t>(splits, std::max<std::int64_t>(1, key_tiles / min_tiles));
  splits = std::min<std::int64_t>(splits, kMaxSplits);
  splits = std::max<std::int64_t>(splits, 1);
  const std::int64_t tiles_per_split = (key_tiles + splits - 1) / splits;
  // The kernels count a block's key tiles (times chunks per tile) in 32 bits.
  check(tiles_per_split <= (std::int64_t(1) << 26), "softmax_attention",
        "cuda: too many keys for one launch (N = ", a.N, ")");
  p.keys_per_split = std::max<std::int64_t>(1, tiles_per_split * v.bn);
  p.splits = a.N == 0 ? 1 : (a.N + p.keys_per_split - 1) / p.keys_per_split;
  pl.merge = p.splits > 1;
  pl.pack_k = worth_packing(v, p, p.k_vec, a.d, vec);
  pl.pack_v = worth_packing(v, p, p.v_vec, a.dv, vec);
  pl.grid = rows_blocks * p.splits;
  check(pl.grid <= 0x7fffffff, "softmax_attention", "cuda: problem too large for one launch (",
        pl.grid, " blocks)");
  return pl;
}

// Whether the decode kernel merges its own splits. Up to a few hundred
// splits the last block's merge saves a launch; one row over 528 splits
// (M 1, N 262144) ran slower merged by one block than by the merge kernel
// (docs/log/cuda.md, "Kernel design: measured"), so many splits keep the
// block-parallel merge, unless the variant's own merge keeps many splits'
// loads in flight (merges_any_splits: the bulk-copy kernel).
constexpr std::int64_t kFusedMergeMaxSplits = 256;
bool fused_merge(const Plan& pl) {
  return pl.merge && pl.v->decode &&
         (pl.v->merges_any_splits || pl.p.splits <= kFusedMergeMaxSplits);
}

// The decode kernel's ticket counters for `rows` row groups on (device,
// stream), kept per thread as the cuBLAS workspace is (matmul/): calls
// on one stream run in order and every launch leaves its counters at 0, so
// they share one buffer; calls on other streams, which may overlap, have
// their own. Allocated and zeroed (on the stream) at the first call, grown
// geometrically; an outgrown buffer is kept until the thread ends, since a
// recorded graph may still point at it. While the stream is capturing
// nothing is allocated: null when there is no buffer large enough yet
// (the separate merge kernel then runs; docs/guide/graphs.md asks for an eager
// first call on the stream before a capture anyway).
unsigned* merge_counters(int dev, cudaStream_t st, std::int64_t rows) {
  struct Entry {
    int dev;
    cudaStream_t st;
    unsigned* p;
    std::int64_t n;
  };
  struct Cache {
    std::vector<Entry> entries;
    std::vector<void*> owned;
    ~Cache() {
      for (void* p : owned) (void)cudaFree(p);  // errors ignored at exit
    }
  };
  thread_local Cache cache;
  Entry* e = nullptr;
  for (Entry& x : cache.entries)
    if (x.dev == dev && x.st == st) e = &x;
  if (e && e->n >= rows) return e->p;
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(st, &cs));
  if (cs != cudaStreamCaptureStatusNone) return nullptr;
  const std::int64_t n = std::max<std::int64_t>(rows, e ? 2 * e->n : 1024);
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, std::size_t(n) * sizeof(unsigned)));
  cache.owned.push_back(p);
  CUDA_CHECK(cudaMemsetAsync(p, 0, std::size_t(n) * sizeof(unsigned), st));
  if (!e) {
    cache.entries.push_back({dev, st, nullptr, 0});
    e = &cache.entries.back();
  }
  e->p = static_cast<unsigned*>(p);
  e->n = n;
  return e->p;
}

template <class T, class S = T>
void run(const AttentionArgs& a) {
  const AttentionDeviceScope scope(a.out.data);
  Plan pl = make_plan<T, S>(a, scope.dev);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const auto round256 = [](std::size_t n) { return (n + 255) / 256 * 256; };
  if (pl.merge)
    check(merge_blocks(pl.p) <= 0x7fffffff, "softmax_attention",
          "cuda: too many rows for the merge launch (", merge_blocks(pl.p), ")");
  // Scratch: split-KV partials (in T), then packed K and V (in S) where they
  // pay.
  std::size_t acc_bytes = 0, ml_bytes = 0;
  if (pl.merge) {
    const std::size_t rows = std::size_t(pl.p.splits * pl.p.bh * a.M);
    acc_bytes = round256(rows * std::size_t(a.dv) * sizeof(T));
    ml_bytes = round256(rows * 2 * sizeof(T));
  }
  constexpr int vec = Vec<T>::n;
  constexpr std::size_t vb = vec * sizeof(S);
  const bool pack_k = pl.pack_k, pack_v = pl.pack_v;
  AttentionArgs& pa = pl.p.a;
  const std::size_t k_bytes =
      pack_k ? round256(std::size_t(elements(source_layout(pa, pa.k))) * sizeof(S)) : 0;
  const std::size_t v_bytes =
      pack_v ? round256(std::size_t(elements(source_layout(pa, pa.v))) * sizeof(S)) : 0;
  void* scratch = nullptr;
  if (pack_k || pack_v) {
    // Packing is only an optimisation: without memory for it, run unpacked.
    if (cudaMallocAsync(&scratch, acc_bytes + ml_bytes + k_bytes + v_bytes, st) == cudaSuccess) {
      char* at = static_cast<char*>(scratch) + acc_bytes + ml_bytes;
      if (pack_k) pack(pa, pa.k, at, sizeof(S), st);
      if (pack_v) pack(pa, pa.v, at + k_bytes, sizeof(S), st);
      pl.p.k_vec = vec_ok(pa.k, attn::kColDim, true, vec, vb);
      pl.p.v_vec = vec_ok(pa.v, attn::kColDim, true, vec, vb);
    } else {
      (void)cudaGetLastError();
      scratch = nullptr;
    }
  }
  if (pl.merge && !scratch) CUDA_CHECK(cudaMallocAsync(&scratch, acc_bytes + ml_bytes, st));
  if (pl.merge) {
    pl.p.part_acc = scratch;
    pl.p.part_ml = static_cast<char*>(scratch) + acc_bytes;
  }
  unsigned* counters = fused_merge(pl) ? merge_counters(scope.dev, st, pl.p.bh * a.M) : nullptr;
  pl.v->launch(pl.p, counters, int(pl.grid), pl.v->smem, st);
  const cudaError_t launch_err = cudaGetLastError();
  if (launch_err == cudaSuccess && pl.merge && !counters) (void)launch_split_merge<T, S>(pl.p, st);
  const cudaError_t err = launch_err != cudaSuccess ? launch_err : cudaGetLastError();
  if (scratch) CUDA_CHECK(cudaFreeAsync(scratch, st));
  if (err != cudaSuccess) throw_cuda_error(err, pl.v->name, __FILE__, __LINE__);
}

}  // namespace

void attention_f32(const AttentionArgs& a) { run<float>(a); }
void attention_f64(const AttentionArgs& a) { run<double>(a); }
void attention_bf16_decode(const AttentionArgs& a) { run<float, __nv_bfloat16>(a); }
void attention_f16_decode(const AttentionArgs& a) { run<float, __half>(a); }

const char* attention_decode_supports(const AttentionArgs& a) {
  if (a.dtype() != DType::bf16 && a.dtype() != DType::f16) return "only bf16 and f16";
  if (a.M > kDecodeMaxRows) return "more than 8 query rows (the tensor-core kernel's)";
  if (a.mask.data && a.mask.dtype != DType::boolean && a.mask.dtype != a.dtype())
    return "mask must be bool or of q's dtype";
  for (const Variant& v : variants())
    if (v.decode && v.is_default && serves(v, a)) return nullptr;
  return "head dims over the decode kernel's reach (256)";
}

const char* attention_supports(const AttentionArgs& a) {
  if (a.dtype() != DType::f32 && a.dtype() != DType::f64) return "only f32 and f64";
  if (a.mask.data && a.mask.dtype != DType::boolean && a.mask.dtype != a.dtype())
    return "mask must be bool or of q's dtype";
  return nullptr;
}

std::string attention_plan(const AttentionArgs& a) {
  const int dev = attention_device_of(a.out.data);
  check(dev >= 0, "softmax_attention", "cuda: out is not device memory");
  const DType dt = a.dtype();
  const Plan pl = dt == DType::f64    ? make_plan<double, double>(a, dev)
                  : dt == DType::bf16 ? make_plan<float, __nv_bfloat16>(a, dev)
                  : dt == DType::f16  ? make_plan<float, __half>(a, dev)
                                      : make_plan<float, float>(a, dev);
  // merge=in_kernel: the decode kernel's last block per row merges (a
  // capture on a stream without counters yet runs merge=kernel instead).
  const char* merge = !pl.merge ? "" : fused_merge(pl) ? " merge=in_kernel" : " merge=kernel";
  return std::string(pl.v->name) + " grid=" + std::to_string(pl.grid) +
         " splits=" + std::to_string(pl.p.splits) + merge + (pl.pack_k ? " pack_k" : "") +
         (pl.pack_v ? " pack_v" : "");
}

}  // namespace strata::cuda
