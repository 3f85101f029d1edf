// Launcher of the bf16/f16 tensor-core attention kernel (flash_mma.cuh):
// turns AttentionArgs into FlashArgs (make_flash_args, the one place that
// reads the front end's struct), packs q, k or v into scratch when their
// layout cannot be read in 16-byte chunks, picks the configuration by head
// dim, and registers the kernels. Calls with M <= 8 query rows (decode) go
// to the native bf16/f16 split-KV decode kernel of attention_launch.cu
// (registered first, "cuda.attention.decode_<dt>"); head dims over 128, and
// decode-like calls with too few CTAs (too_few_ctas) and 8 < M, run the f32
// kernel on f32 copies of the inputs (run_via_f32).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/attention/flash_mma.hpp"
#include "cuda/attention/flash_mma_variants.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {
namespace {

constexpr const char* kOp = "softmax_attention";

// The conversion from the front end's struct. q, k and v must already be
// readable in 16-byte chunks (run() packs them first).
FlashArgs make_flash_args(const AttentionArgs& a) {
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

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

// Rows of x can be moved in 16-byte chunks: aligned base, unit last-dim
// stride, the row length and every other stride multiples of 8 elements.
bool chunk_ok(const Operand& x) {
  const int r = x.rank;
  if (!aligned16(x.data) || x.strides[r - 1] != 1 || x.shape[r - 1] % 8) return false;
  for (int i = 0; i < r - 1; ++i)
    if (x.shape[i] > 1 && x.strides[i] % 8) return false;
  return true;
}

std::size_t round256(std::size_t n) { return (n + 255) / 256 * 256; }

// A row-major copy of operand x: broadcast (stride-0) dims stay stride 0
// and are copied once; rows are padded to `row` elements (zeros).
struct Pack {
  Operand src, dst;  // dst.data set by place()
  std::size_t bytes = 0;
  bool zero = false;  // padding columns to zero first
};
Pack plan_pack(const Operand& x, std::size_t isz, std::int64_t row) {
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
// Copies x into `at` on st and returns the operand the kernels read.
Operand place(Pack& p, const Operand& x, void* at, std::size_t isz, cudaStream_t st) {
  p.dst.data = at;
  if (p.zero) CUDA_CHECK(cudaMemsetAsync(at, 0, p.bytes, st));
  strided_copy_async(p.dst, p.src, isz, st);
  Operand y = x;
  y.data = at;
  for (int i = 0; i < x.rank; ++i) y.strides[i] = x.strides[i] == 0 ? 0 : p.dst.strides[i];
  return y;
}

int current_device_of(const void* p) {
  static const int count = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  if (count == 1) return 0;
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged ? attr.device : -1;
}

// Makes out's device current for the call and restores the caller's.
struct DeviceScope {
  int prev = 0, dev = 0;
  explicit DeviceScope(const void* p) {
    dev = current_device_of(p);
    check(dev >= 0, kOp, "cuda: out is not device memory");
    CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != dev) CUDA_CHECK(cudaSetDevice(dev));
  }
  ~DeviceScope() {
    if (prev != dev) (void)cudaSetDevice(prev);
  }
};

const std::vector<FlashVariant>& table(DType dt) {
  return dt == DType::bf16 ? flash_variants_bf16() : flash_variants_f16();
}

// STRATA_FLASH_VARIANT=<name>[,<name>...] (tuning runs) forces the listed
// configuration of the call's head dim; otherwise the default one.
bool forced(const char* name) {
  static const std::string list = [] {
    const char* e = std::getenv("STRATA_FLASH_VARIANT");
    std::string l(",");
    l += e ? e : "";
    l += ',';
    return l;
  }();
  std::string item(",");
  item += name;
  item += ',';
  return list.find(item) != std::string::npos;
}

const FlashVariant& pick(DType dt, int D) {
  const FlashVariant* best = nullptr;
  for (const FlashVariant& v : table(dt)) {
    if (v.D != D) continue;
    if (forced(v.name)) return v;
    if (v.is_default && !best) best = &v;
  }
  check(best != nullptr, kOp, "cuda: no tensor-core configuration for d = ", D);
  return *best;
}

// Raises the dynamic shared-memory limit once per (variant, device).
void prepare(const FlashVariant& v, int dev) {
  static std::mutex mu;
  static std::vector<std::pair<const void*, int>> done;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& e : done)
    if (e.first == v.kernel && e.second == dev) return;
  CUDA_CHECK(
      cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(v.smem)));
  done.emplace_back(v.kernel, dev);
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
  char* at(std::size_t off) const { return static_cast<char*>(p) + off; }
};

void run_mma(const AttentionArgs& a, int D) {
  const DeviceScope scope(a.out.data);
  const FlashVariant& v = pick(a.dtype(), D);
  prepare(v, scope.dev);
  cudaStream_t st = static_cast<cudaStream_t>(a.stream);

  AttentionArgs w = a;
  Operand* ops[3] = {&w.q, &w.k, &w.v};
  Pack packs[3];
  bool need[3];
  std::size_t total = 0;
  for (int i = 0; i < 3; ++i) {
    need[i] = !chunk_ok(*ops[i]);
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
  f.o_vec = chunk_ok(w.out);
  f.m_tiles = (a.M + v.bm - 1) / v.bm;
  const std::int64_t grid = f.m_tiles * a.batch_count() * a.Hq;
  check(grid <= 0x7fffffff, kOp, "cuda: problem too large for one launch (", grid, " blocks)");
  v.launch(f, int(grid), v.smem, st);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, v.name, __FILE__, __LINE__);
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

void run_d64(const AttentionArgs& a) { run_mma(a, 64); }
void run_d128(const AttentionArgs& a) { run_mma(a, 128); }
void run_f32(const AttentionArgs& a) {
  if (a.dtype() == DType::bf16)
    run_via_f32<__nv_bfloat16>(a);
  else
    run_via_f32<__half>(a);
}

// Decode-like calls: a handful of query rows against many keys in so few
// CTAs that most SMs idle while each CTA walks every key tile (this kernel
// has no split-KV yet). With M <= 8 the native decode kernel (split-KV,
// registered before these) takes them; the rest (8 < M <= 64 per tile) go
// through f32 copies to the f32 kernels, which split the keys: the
// conversions cost a pass over K and V, far less than one CTA per head
// streaming 10^5 keys.
bool too_few_ctas(const AttentionArgs& a) {
  constexpr std::int64_t kMinCtas = 64, kMinKeys = 16384, kRows = 64;
  const std::int64_t ctas = a.batch_count() * a.Hq * ((a.M + kRows - 1) / kRows);
  return ctas < kMinCtas && a.N >= kMinKeys;
}

std::string supports_d64(const AttentionArgs& a) {
  if (too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  return a.d <= 64 && a.dv <= 64 ? "" : "head dims over 64";
}
std::string supports_d128(const AttentionArgs& a) {
  if (too_few_ctas(a)) return "too few query tiles for the keys (no split-KV)";
  return a.d <= 128 && a.dv <= 128 ? "" : "head dims over 128";
}

}  // namespace

void register_cuda_flash_mma(Registry& r) {
  // First: the registry takes the first kernel whose supports() accepts.
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.decode_bf16",
                              &attention_bf16_decode, &attention_decode_supports);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.decode_f16",
                              &attention_f16_decode, &attention_decode_supports);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_d64", &run_d64,
                              &supports_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_d128", &run_d128,
                              &supports_d128);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::bf16, "cuda.attention.mma_bf16_via_f32",
                              &run_f32);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_d64", &run_d64,
                              &supports_d64);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_d128", &run_d128,
                              &supports_d128);
  r.add_kernel<AttentionArgs>(kOp, "cuda", DType::f16, "cuda.attention.mma_f16_via_f32", &run_f32);
}

}  // namespace strata::cuda
