// cuda matmul and linear through cuBLAS (and cuBLASLt for the bias).
//
// Row-major without copies: cuBLAS is column-major, and a row-major [M, N]
// out with row stride ld is a column-major [N, M] matrix with the same ld,
// so a row-major out is computed as out^T = b^T a^T. Each input is then
// either column-major in cuBLAS's sense (CUBLAS_OP_N) or row-major
// (CUBLAS_OP_T): a transposed view is a flag, not a copy. A column-major out
// (unit row stride) is computed as out = a b directly. Layouts cuBLAS cannot
// take (both strides != 1, zero or negative strides, overlapping rows, an
// ld beyond int) are copied to contiguous temporaries first through the
// runtime's strided copy (strided_copy.hpp); an out it cannot write goes
// through a temporary that is copied out at the end.
//
// Batch: the batch dims of a, b and out are merged where every operand
// allows; one dim left (strides >= 0) is cublasGemmStridedBatchedEx (a
// broadcast operand has batch stride 0), more are cublasGemmBatchedEx with
// pointer arrays computed on the device.
//
// Types and precision: f64 in CUBLAS_COMPUTE_64F; f16/bf16 in
// CUBLAS_COMPUTE_32F (and reductions in f32: the handle disallows
// reduced-precision reductions); f32 highest in CUBLAS_COMPUTE_32F (no
// TF32), medium in CUBLAS_COMPUTE_32F_FAST_TF32. cuBLAS has no 3xTF32 mode
// (its FP32 emulation, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, is BF16x9 and
// for Blackwell), so high runs as highest.
//
// linear's bias: cuBLASLt with CUBLASLT_EPILOGUE_BIAS when out is row-major
// (the bias runs along the rows of out^T), the bias is contiguous, the batch
// is uniform and the dtype is not f64; otherwise out is filled with the bias
// broadcast (the strided copy) and the GEMM accumulates (beta = 1). f16 and
// bf16 always take the epilogue (copying what must be copied for it):
// beta = 1 rounds the product to the output type before the bias is added.
//
// MatmulArgs::accumulate (out += a b + bias): beta = 1 with C = D = out
// (cuBLAS and cuBLASLt read C in the compute type, so f16/bf16 add out's
// values in f32 and round once); an out that goes through a temporary is
// copied into it first. The bias then: cuBLASLt's epilogue with beta = 1
// (D = a b + C + bias) where it applies (above); elsewhere it cannot be
// filled into out, so out += ones [M, 1] bias [1, N] runs first as a K = 1
// GEMM (beta = 1, f32 highest: exact products) and the product is added
// after it with beta = 1. K = 0 with a bias is that K = 1 GEMM alone.
//
// Handles: one cuBLAS and one cuBLASLt handle per device and thread, made
// on first use and kept; set to the call's stream (and its workspace) only
// when it differs from the previous call's on that handle. The GEMM
// workspace is kept per thread, device and stream (workspace()); other
// temporaries come from the stream-ordered allocator (cudaMallocAsync) and
// go back with cudaFreeAsync on the same stream; the device's default pool
// is asked once to keep 256 MiB across synchronisations so that these stay
// pool hits.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/dtype.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

using Index = std::int64_t;

[[noreturn]] void throw_cublas(cublasStatus_t s, const char* call) {
  fail("matmul", "cuda: ", call, " failed: ", cublasGetStatusName(s));
}

#define CUBLAS_CHECK(call)                                                              \
  do {                                                                                  \
    const cublasStatus_t strata_blas_st_ = (call);                                      \
    if (strata_blas_st_ != CUBLAS_STATUS_SUCCESS) throw_cublas(strata_blas_st_, #call); \
  } while (0)

constexpr std::size_t kWorkspace = std::size_t(32) << 20;  // cuBLAS's advice for Hopper
constexpr std::uint64_t kPoolKeep = std::uint64_t(256) << 20;

struct Handles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  // The stream and workspace last given to `blas` (bound): a call on the
  // same stream skips cublasSetStream / cublasSetWorkspace.
  bool bound = false;
  cudaStream_t stream = nullptr;
  void* ws = nullptr;
};

struct HandleCache {
  std::vector<Handles> per_device;
  ~HandleCache() {
    for (Handles& h : per_device) {
      if (h.blas) (void)cublasDestroy(h.blas);
      if (h.lt) (void)cublasLtDestroy(h.lt);
    }
  }
};

Handles& handles(int dev) {
  thread_local HandleCache cache;
  if (cache.per_device.size() <= static_cast<std::size_t>(dev)) cache.per_device.resize(dev + 1);
  Handles& h = cache.per_device[dev];
  if (!h.blas) {
    CUBLAS_CHECK(cublasCreate(&h.blas));
    CUBLAS_CHECK(cublasSetMathMode(h.blas, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  }
  if (!h.lt) CUBLAS_CHECK(cublasLtCreate(&h.lt));
  return h;
}

// The GEMM workspace of this thread's calls on (device, stream): allocated
// once and kept, as PyTorch keeps one per handle and stream, so a decode
// step's small GEMMs do not each allocate and free 32 MiB. One thread's
// calls on one stream run in order, so they may share it.
void* workspace(int dev, cudaStream_t st) {
  struct Entry {
    int dev;
    cudaStream_t st;
    void* p;
  };
  struct Cache {
    std::vector<Entry> entries;
    ~Cache() {
      for (const Entry& e : entries) (void)cudaFree(e.p);  // errors ignored at exit
    }
  };
  thread_local Cache cache;
  for (const Entry& e : cache.entries)
    if (e.dev == dev && e.st == st) return e.p;
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, kWorkspace));
  cache.entries.push_back({dev, st, p});
  return p;
}

// Once per device: the default pool keeps kPoolKeep bytes reserved over
// synchronisations (it never lowers a larger setting). After the first call
// per device (of the first 64) one atomic load, no lock.
void keep_pool(int dev) {
  static std::atomic<std::uint64_t> seen{0};
  const std::uint64_t bit = dev < 64 ? std::uint64_t(1) << dev : 0;
  if (bit != 0 && (seen.load(std::memory_order_acquire) & bit) != 0) return;
  struct Mark {  // set once the pool is configured (also when this returns early)
    std::uint64_t b;
    ~Mark() {
      if (b != 0) seen.fetch_or(b, std::memory_order_release);
    }
  } mark{bit};
  static std::mutex mu;
  static std::vector<bool> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.size() <= static_cast<std::size_t>(dev)) done.resize(dev + 1, false);
  if (done[dev]) return;
  done[dev] = true;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
    std::uint64_t cur = 0;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &cur) == cudaSuccess &&
        cur < kPoolKeep) {
      std::uint64_t v = kPoolKeep;
      (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &v);
    }
  }
  (void)cudaGetLastError();
}

// Stream-ordered temporaries, freed on the stream when the call ends (also
// when it throws).
class Scratch {
 public:
  explicit Scratch(cudaStream_t st) : st_(st) {}
  ~Scratch() {
    for (int i = 0; i < n_; ++i) (void)cudaFreeAsync(p_[i], st_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get(std::size_t bytes) {
    check(n_ < kMax, "matmul", "cuda: too many temporaries");
    void* p = nullptr;
    CUDA_CHECK(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 16), st_));
    p_[n_++] = p;
    return p;
  }

 private:
  static constexpr int kMax = 8;
  cudaStream_t st_;
  void* p_[kMax] = {};
  int n_ = 0;
};

// One matrix of the product as cuBLAS sees it: logical rows x cols, strides.
struct Mat {
  char* ptr = nullptr;
  Index rows = 0, cols = 0, rs = 0, cs = 0;
  Mat t() const { return {ptr, cols, rows, cs, rs}; }
};

struct BlasOp {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  Index ld = 0;
};

// op(stored) == x for a column-major stored matrix with leading dim ld.
BlasOp as_blas(const Mat& x) {
  BlasOp r;
  if ((x.rows == 1 || x.rs == 1) && (x.cols == 1 || x.cs >= std::max<Index>(1, x.rows))) {
    r = {true, CUBLAS_OP_N, x.cols == 1 ? std::max<Index>(1, x.rows) : x.cs};
  } else if ((x.cols == 1 || x.cs == 1) && (x.rows == 1 || x.rs >= std::max<Index>(1, x.cols))) {
    r = {true, CUBLAS_OP_T, x.rows == 1 ? std::max<Index>(1, x.cols) : x.rs};
  }
  if (r.ld > INT_MAX) r.ok = false;
  return r;
}

Mat mat_of(const Operand& op, int br, Index rows, Index cols) {
  return {static_cast<char*>(op.data), rows, cols, op.strides[br], op.strides[br + 1]};
}

// A contiguous [batch..., rows, cols] layout over `data`, shaped like `like`.
Operand contiguous_like(const Operand& like, void* data) {
  Operand o = like;
  o.data = data;
  Index s = 1;
  for (int d = like.rank - 1; d >= 0; --d) {
    o.strides[d] = s;
    s *= like.shape[d];
  }
  return o;
}

Index numel(const Operand& o) {
  Index n = 1;
  for (int d = 0; d < o.rank; ++d) n *= o.shape[d];
  return n;
}

// Pointer arrays for cublasGemmBatchedEx: [3][count] (x, y, c).
struct PtrParams {
  int rank;
  Index count;
  Index shape[kMaxDims];
  Index strides[3][kMaxDims];  // elements
  char* base[3];
  int isz;
};

__global__ void fill_pointers(PtrParams p, void** out) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.count) return;
  Index rest = i, off[3] = {0, 0, 0};
  for (int d = p.rank - 1; d >= 0; --d) {
    const Index idx = rest % p.shape[d];
    rest /= p.shape[d];
    for (int j = 0; j < 3; ++j) off[j] += idx * p.strides[j][d];
  }
  for (int j = 0; j < 3; ++j) out[j * p.count + i] = p.base[j] + off[j] * p.isz;
}

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(DType dt, Precision p) {
  if (dt == DType::f64) return CUBLAS_COMPUTE_64F;
  if (dt == DType::f32 && p == Precision::medium) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;  // f32 highest and high (no 3xTF32 in cuBLAS), f16, bf16
}

// alpha/beta in the scale type (f64 for f64, else f32).
struct Scalars {
  double d[2];
  float f[2];
  const void* alpha(bool f64) const { return f64 ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* beta(bool f64) const { return f64 ? static_cast<const void*>(&d[1]) : &f[1]; }
};

// RAII for cuBLASLt descriptors.
struct LtDescs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t x = nullptr, y = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtDescs() {
    if (pref) (void)cublasLtMatmulPreferenceDestroy(pref);
    if (c) (void)cublasLtMatrixLayoutDestroy(c);
    if (y) (void)cublasLtMatrixLayoutDestroy(y);
    if (x) (void)cublasLtMatrixLayoutDestroy(x);
    if (op) (void)cublasLtMatmulDescDestroy(op);
  }
};

struct Gemm {
  Mat x, y, c;  // c (m x n) = x (m x k) y (k x n), column-major sense
  BlasOp ox, oy;
  Index m, n, k;
  // Batch: uniform (count, strides) or pointer arrays over the batch dims.
  bool uniform = true;
  Index count = 1, sx = 0, sy = 0, sc = 0;
  int batch_rank = 0;
  Index batch_shape[kMaxDims] = {};
  Index bstr[3][kMaxDims] = {};
};

void set_lt_batch(cublasLtMatrixLayout_t l, Index count, Index stride) {
  const std::int32_t n = static_cast<std::int32_t>(count);
  const std::int64_t s = stride;
  CUBLAS_CHECK(
      cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &n, sizeof n));
  CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s,
                                                sizeof s));
}

// c = x y + bias (bias along c's rows; none when bias is null) through
// cuBLASLt; false when Lt has no algorithm for it (the caller falls back).
// With accumulate, beta = 1 and C = D: c = x y + c + bias.
bool lt_bias_gemm(const Handles& h, cudaStream_t st, void* ws, const Gemm& g, DType dt,
                  cublasComputeType_t ct, const void* bias, bool accumulate) {
  const cudaDataType_t t = cuda_type(dt);
  LtDescs d;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&d.op, ct, CUDA_R_32F));
  const cublasOperation_t ta = g.ox.op, tb = g.oy.op;
  const cublasLtEpilogue_t epi = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  if (bias)
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
  const bool xn = ta == CUBLAS_OP_N, yn = tb == CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.x, t, xn ? g.m : g.k, xn ? g.k : g.m, g.ox.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.y, t, yn ? g.k : g.n, yn ? g.n : g.k, g.oy.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d.c, t, g.m, g.n, as_blas(g.c).ld));
  if (g.count > 1) {
    set_lt_batch(d.x, g.count, g.sx);
    set_lt_batch(d.y, g.count, g.sy);
    set_lt_batch(d.c, g.count, g.sc);
  }
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&d.pref));
  const std::uint64_t wsb = kWorkspace;
  // Accumulating, a split-K reduction in place would sum partials in the
  // output type on top of out's values: only the compute-type scheme then.
  const std::uint32_t red = accumulate ? std::uint32_t(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
                                       : std::uint32_t(CUBLASLT_REDUCTION_SCHEME_INPLACE |
                                                       CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      d.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &red, sizeof red));
  cublasLtMatmulHeuristicResult_t res{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(h.lt, d.op, d.x, d.y, d.c, d.c, d.pref, 1, &res, &found) !=
          CUBLAS_STATUS_SUCCESS ||
      found == 0)
    return false;
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(h.lt, d.op, &alpha, g.x.ptr, d.x, g.y.ptr, d.y, &beta, g.c.ptr, d.c,
                              g.c.ptr, d.c, &res.algo, ws, kWorkspace, st));
  return true;
}

void blas_gemm(const Handles& h, cudaStream_t st, Scratch& scratch, const Gemm& g, DType dt,
               cublasComputeType_t ct, bool accumulate) {
  const cudaDataType_t t = cuda_type(dt);
  const bool f64 = dt == DType::f64;
  Scalars s{{1.0, accumulate ? 1.0 : 0.0}, {1.0f, accumulate ? 1.0f : 0.0f}};
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int ldx = static_cast<int>(g.ox.ld), ldy = static_cast<int>(g.oy.ld);
  const int ldc = static_cast<int>(as_blas(g.c).ld);
  if (g.uniform && g.count == 1) {
    CUBLAS_CHECK(cublasGemmEx(h.blas, g.ox.op, g.oy.op, m, n, k, s.alpha(f64), g.x.ptr, t, ldx,
                              g.y.ptr, t, ldy, s.beta(f64), g.c.ptr, t, ldc, ct,
                              CUBLAS_GEMM_DEFAULT));
  } else if (g.uniform) {
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h.blas, g.ox.op, g.oy.op, m, n, k, s.alpha(f64),
                                            g.x.ptr, t, ldx, g.sx, g.y.ptr, t, ldy, g.sy,
                                            s.beta(f64), g.c.ptr, t, ldc, g.sc,
                                            static_cast<int>(g.count), ct, CUBLAS_GEMM_DEFAULT));
  } else {
    PtrParams p{};
    p.rank = g.batch_rank;
    p.count = g.count;
    for (int d = 0; d < g.batch_rank; ++d) {
      p.shape[d] = g.batch_shape[d];
      for (int j = 0; j < 3; ++j) p.strides[j][d] = g.bstr[j][d];
    }
    p.base[0] = g.x.ptr;
    p.base[1] = g.y.ptr;
    p.base[2] = g.c.ptr;
    p.isz = static_cast<int>(itemsize(dt));
    void** ptrs = static_cast<void**>(scratch.get(sizeof(void*) * 3 * g.count));
    const int threads = 256;
    fill_pointers<<<static_cast<unsigned>((g.count + threads - 1) / threads), threads, 0, st>>>(
        p, ptrs);
    CUDA_CHECK_LAUNCH();
    CUBLAS_CHECK(cublasGemmBatchedEx(
        h.blas, g.ox.op, g.oy.op, m, n, k, s.alpha(f64), const_cast<const void* const*>(ptrs), t,
        ldx, const_cast<const void* const*>(ptrs + g.count), t, ldy, s.beta(f64),
        ptrs + 2 * g.count, t, ldc, static_cast<int>(g.count), ct, CUBLAS_GEMM_DEFAULT));
  }
}

// n elements of `isz` bytes each set to the bit pattern `bits` (a constant
// of the element type, e.g. 1).
__global__ void fill_bits(void* p, Index n, int isz, unsigned long long bits) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (isz == 2)
    static_cast<std::uint16_t*>(p)[i] = static_cast<std::uint16_t>(bits);
  else if (isz == 4)
    static_cast<std::uint32_t*>(p)[i] = static_cast<std::uint32_t>(bits);
  else
    static_cast<unsigned long long*>(p)[i] = bits;
}

// The bit pattern of 1 in dt.
unsigned long long one_bits(DType dt) {
  switch (dt) {
    case DType::f64:
      return 0x3FF0000000000000ull;
    case DType::f16:
      return 0x3C00u;
    case DType::bf16:
      return 0x3F80u;
    default:
      return 0x3F800000u;
  }
}

// The bias broadcast to `dst`'s shape (batch..., M, N): stride 0 but along N.
Operand bias_broadcast(const Operand& bias, const Operand& dst) {
  Operand s = dst;
  s.data = bias.data;
  for (int d = 0; d < dst.rank; ++d) s.strides[d] = 0;
  s.strides[dst.rank - 1] = bias.strides[0];
  return s;
}

// True when the batch dims of a, b and out merge into at most one dim with
// non-negative strides (out's positive): one strided-batched call.
bool batch_uniform(const MatmulArgs& args, const Operand& a, const Operand& b, const Operand& o) {
  Index size = 0, s[3] = {0, 0, 0};
  int nd = 0;
  for (int d = 0; d < args.batch_rank; ++d) {
    const Index n = args.batch_shape[d];
    if (n == 1) continue;
    const Index cur[3] = {a.strides[d], b.strides[d], o.strides[d]};
    if (nd > 0 && s[0] == cur[0] * n && s[1] == cur[1] * n && s[2] == cur[2] * n) {
      size *= n;
    } else {
      ++nd;
      size = n;
    }
    for (int j = 0; j < 3; ++j) s[j] = cur[j];
  }
  return nd == 0 || (nd == 1 && s[0] >= 0 && s[1] >= 0 && s[2] > 0);
}

}  // namespace

namespace {

// out [batch..., M, N] += bias[n] broadcast over rows and the batch, as the
// GEMM out += ones [batch..., M, 1] bias [batch..., 1, N] (batch strides 0)
// with beta = 1 (f32 highest: the products 1 * bias are exact), in out's
// dtype; f16/bf16 add in f32 and round once. `scratch` holds the ones.
void accumulate_bias(const MatmulArgs& args, const Operand& out, Scratch& scratch,
                     cudaStream_t st) {
  const DType dt = out.dtype;
  const std::size_t isz = itemsize(dt);
  const int br = args.batch_rank;
  void* ones = scratch.get(std::size_t(args.M) * isz);
  const int threads = 256;
  fill_bits<<<static_cast<unsigned>((args.M + threads - 1) / threads), threads, 0, st>>>(
      ones, args.M, static_cast<int>(isz), one_bits(dt));
  CUDA_CHECK_LAUNCH();
  MatmulArgs r;
  r.batch_rank = br;
  for (int d = 0; d < br; ++d) r.batch_shape[d] = args.batch_shape[d];
  r.M = args.M;
  r.N = args.N;
  r.K = 1;
  r.a = out;
  r.a.data = ones;
  r.a.shape[br + 1] = 1;
  r.b = out;
  r.b.data = args.bias.data;
  r.b.shape[br] = 1;
  for (int d = 0; d < br; ++d) r.a.strides[d] = r.b.strides[d] = 0;
  r.a.strides[br] = 1;
  r.a.strides[br + 1] = 1;
  r.b.strides[br] = 0;
  r.b.strides[br + 1] = args.bias.strides[0];
  r.out = out;
  r.precision = Precision::highest;
  r.accumulate = true;
  r.stream = args.stream;
  matmul_cublas(r);
}

}  // namespace

std::string matmul_cublas_supports(const MatmulArgs& a) {
  const Index batch = a.batch_count();
  if (a.M > INT_MAX || a.N > INT_MAX || a.K > INT_MAX || batch > INT_MAX)
    return "M, N, K and the batch count must fit cuBLAS's int (2^31 - 1)";
  return "";
}

namespace {

// The current device; with one visible device it is 0 and no
// cudaGetDevice is made per call.
int current_device() {
  static const int ndev = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  int dev = 0;
  if (ndev != 1) CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

// h's cuBLAS handle on stream st with this thread's workspace for (dev, st);
// the workspace. cublasSetStream resets the workspace, so both are set
// together, and only when the stream differs from the last call's.
void* bind(Handles& h, int dev, cudaStream_t st) {
  if (h.bound && h.stream == st) return h.ws;
  h.bound = false;
  CUBLAS_CHECK(cublasSetStream(h.blas, st));
  void* ws = workspace(dev, st);
  CUBLAS_CHECK(cublasSetWorkspace(h.blas, ws, kWorkspace));
  h.stream = st;
  h.ws = ws;
  h.bound = true;
  return ws;
}

}  // namespace

void matmul_cublas(const MatmulArgs& args) {
  cudaStream_t st = static_cast<cudaStream_t>(args.stream);
  const int dev = current_device();
  keep_pool(dev);
  Scratch scratch(st);
  const DType dt = args.out.dtype;
  const std::size_t isz = itemsize(dt);
  const int br = args.batch_rank;
  const Index M = args.M, N = args.N, K = args.K;
  const bool has_bias = args.bias.data != nullptr;

  if (K == 0) {  // out = bias broadcast, or 0 (accumulate: out += bias, or nothing)
    if (args.accumulate) {
      if (has_bias) accumulate_bias(args, args.out, scratch, st);
      return;
    }
    if (has_bias) {
      strided_copy_async(args.out, bias_broadcast(args.bias, args.out), isz, st);
    } else {
      void* zero = scratch.get(isz);
      CUDA_CHECK(cudaMemsetAsync(zero, 0, isz, st));
      Operand z = args.out;
      z.data = zero;
      for (int d = 0; d < z.rank; ++d) z.strides[d] = 0;
      strided_copy_async(args.out, z, isz, st);
    }
    return;
  }

  // f16/bf16 with a bias go through cuBLASLt's epilogue, which adds the
  // bias in f32 before the one rounding: beta = 1 over an out filled with
  // the bias rounds the product to f16 first (seen on the H200, 2026-12-01:
  // errors of one ulp of the product). So those calls take the epilogue's
  // layout: a contiguous bias, a row-major out and one batch stride, by
  // copies where the caller's layouts are otherwise.
  // cuBLASLt refuses (CUBLAS_STATUS_NOT_SUPPORTED) operands that are not
  // 16-byte aligned, which views at an odd offset are: those go through
  // the aligned scratch copies too.
  auto aligned16 = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  const bool narrow_bias = has_bias && (dt == DType::f16 || dt == DType::bf16);
  const bool copy_all =
      narrow_bias && (!batch_uniform(args, args.a, args.b, args.out) || !aligned16(args.a.data) ||
                      !aligned16(args.b.data) || !aligned16(args.out.data));
  const void* bias_ptr = args.bias.data;
  const bool bias_contig = has_bias && (args.bias.strides[0] == 1 || N == 1);
  if (narrow_bias && (!bias_contig || !aligned16(bias_ptr))) {
    Operand cb = args.bias;
    cb.data = scratch.get(std::size_t(N) * isz);
    cb.strides[0] = 1;
    strided_copy_async(cb, args.bias, isz, st);
    bias_ptr = cb.data;
  }

  // Inputs cuBLAS cannot take: contiguous copies.
  Operand A = args.a, B = args.b;
  if (copy_all || !as_blas(mat_of(A, br, M, K)).ok) {
    A = contiguous_like(args.a, scratch.get(numel(args.a) * isz));
    strided_copy_async(A, args.a, isz, st);
  }
  if (copy_all || !as_blas(mat_of(B, br, K, N)).ok) {
    B = contiguous_like(args.b, scratch.get(numel(args.b) * isz));
    strided_copy_async(B, args.b, isz, st);
  }
  // The output: row-major (c^T = b^T a^T, preferred: the usual trick, and
  // what lets cuBLASLt's bias run along out^T's rows), column-major
  // (c = a b) or a contiguous row-major temporary.
  Operand O = args.out;
  const Mat om = mat_of(O, br, M, N);
  const BlasOp o_row = as_blas(om.t()), o_col = as_blas(om);
  const bool row_out = o_row.ok && o_row.op == CUBLAS_OP_N;
  const bool col_out = !row_out && !narrow_bias && o_col.ok && o_col.op == CUBLAS_OP_N;
  const bool temp_out = (!row_out && !col_out) || copy_all;
  if (temp_out) {
    O = contiguous_like(args.out, scratch.get(numel(args.out) * isz));
    if (args.accumulate) strided_copy_async(O, args.out, isz, st);  // beta = 1 reads it
  }

  Gemm g;
  const Mat am = mat_of(A, br, M, K), bm = mat_of(B, br, K, N), cm = mat_of(O, br, M, N);
  if (col_out) {
    g.x = am;
    g.y = bm;
    g.c = cm;
    g.m = M;
    g.n = N;
  } else {
    g.x = bm.t();
    g.y = am.t();
    g.c = cm.t();
    g.m = N;
    g.n = M;
  }
  g.k = K;
  g.ox = as_blas(g.x);
  g.oy = as_blas(g.y);
  const Operand* xo = col_out ? &A : &B;
  const Operand* yo = col_out ? &B : &A;

  // Batch dims: size-1 dims dropped, neighbours merged where all three allow.
  struct BDim {
    Index size, s[3];
  };
  BDim dims[kMaxDims];
  int nd = 0;
  for (int d = 0; d < br; ++d) {
    if (args.batch_shape[d] == 1) continue;
    const BDim cur{args.batch_shape[d], {xo->strides[d], yo->strides[d], O.strides[d]}};
    if (nd > 0 && dims[nd - 1].s[0] == cur.s[0] * cur.size &&
        dims[nd - 1].s[1] == cur.s[1] * cur.size && dims[nd - 1].s[2] == cur.s[2] * cur.size) {
      dims[nd - 1].size *= cur.size;
      for (int j = 0; j < 3; ++j) dims[nd - 1].s[j] = cur.s[j];
    } else {
      dims[nd++] = cur;
    }
  }
  g.count = args.batch_count();
  g.uniform = nd == 0 || (nd == 1 && dims[0].s[0] >= 0 && dims[0].s[1] >= 0 && dims[0].s[2] > 0);
  if (nd == 1) {
    g.sx = dims[0].s[0];
    g.sy = dims[0].s[1];
    g.sc = dims[0].s[2];
  }
  g.batch_rank = br;
  for (int d = 0; d < br; ++d) {
    g.batch_shape[d] = args.batch_shape[d];
    g.bstr[0][d] = xo->strides[d];
    g.bstr[1][d] = yo->strides[d];
    g.bstr[2][d] = O.strides[d];
  }

  Handles& h = handles(dev);
  void* ws = bind(h, dev, st);
  const cublasComputeType_t ct = compute_type(dt, args.precision);

  bool done = false;
  if (has_bias && !col_out && dt != DType::f64 && g.uniform && (bias_contig || narrow_bias))
    done = lt_bias_gemm(h, st, ws, g, dt, ct, bias_ptr, args.accumulate);
  // f16/bf16 accumulating without a bias: cuBLASLt too (cublasGemmEx with
  // beta = 1 picked slower kernels for the decoder's projections).
  if (!done && !has_bias && args.accumulate && !col_out && g.uniform &&
      (dt == DType::f16 || dt == DType::bf16))
    done = lt_bias_gemm(h, st, ws, g, dt, ct, nullptr, true);
  // (Should cuBLASLt offer no algorithm for an f16/bf16 call, the fallback
  // below is right up to that double rounding.)
  if (!done) {
    if (has_bias && args.accumulate) {
      // O += bias first (its own GEMM, on this thread's handle, which it
      // leaves on the same stream and workspace), then O += a b.
      accumulate_bias(args, O, scratch, st);
    } else if (has_bias) {
      strided_copy_async(O, bias_broadcast(args.bias, O), isz, st);
    }
    blas_gemm(h, st, scratch, g, dt, ct, has_bias || args.accumulate);
  }
  if (temp_out) strided_copy_async(args.out, O, isz, st);
}

}  // namespace strata::cuda
