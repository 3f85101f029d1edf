// Matrix-vector products on cuda with a row-major b: out [M, N] (+)= a [M, K]
// b [K, N] (+ bias) for 1 <= M <= 16 rows where b's columns are unit-stride
// (matmul(x, W) with W [K, N] stored as it reads; any K stride that keeps
// 16-byte rows). matmul_gemv.cu serves the other layout (b unit-stride
// along K, linear's W^T); cuBLAS served this one with more host time than a
// direct cublasGemmEx costs (issue 13; docs/log/ops.md, "Skinny shapes").
//
// Geometry: a block of 256 threads owns CT column groups of V columns (one
// 16-byte load of a row of b: 4 f32 or 8 f16/bf16 columns) and splits K into
// 256 / CT slices. A warp is CT column groups x 32 / CT rows, so one load
// instruction reads 32 / CT rows of CT * 16 contiguous bytes: whole 32-byte
// sectors for CT >= 2. CT is picked per call so that the grid has >= ~1.5
// blocks per SM (every SM streams b: at 1x512x1536 the 3 MB of b must all be
// in flight at once to read at HBM rate); STRATA_GEMV_ROWS_CT=1|2|4|8 forces
// it in a tuning build (A/B runs); M > 1 aims for fewer, fuller blocks
// (kTargetBlocksRows).
// Each thread sums its rows in order, lanes of one column group reduce with
// shuffles (M > 1: a halving reduce-scatter, fold_scatter), warps through
// shared memory in warp order:
// one fixed order, so results are deterministic, no atomics and no second
// kernel.
// a [M, K] (any strides) is read once per block into shared memory as f32,
// zero rows up to the template row count, so the inner loop has no row test.
// M > 8 runs either as one block of 16 rows or (f16/bf16 by default, see
// split_rows) as two blocks of 8 rows per column range (grid.y).
// Like matmul_gemv it is launched with launch_kernel (PDL by default) and
// asks L2 for its slice of b before grid_dependency_wait(): b is only read,
// and an L2 prefetch moves no data into registers or L1, so a b the
// previous kernel wrote is still read correctly after the wait. a is read
// only after the wait.
// Sums run in f32 (f16/bf16 widened), out's old value and the bias added
// before the one rounding, as the MatmulArgs contract says.
// STRATA_CUDA_GEMV=0 sends these calls to cuBLAS as well.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/dispatch_int.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/matmul/gemv_common.cuh"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/pdl_launch.cuh"
#include "cuda/tuning_build.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxRows = 16;
constexpr int kMaxCt = 8;
// a staged as f32: rows rounded up to the template count times K, <= 128 KB.
constexpr std::int64_t kMaxStaged = std::int64_t(1) << 15;
constexpr int kTargetBlocks = 192;  // ~1.5 per SM of an H200 (132 SMs)
// With more than one row a block's fixed work (staging MR x K of a, folding
// MR x V sums) no longer pays for itself at 2 rows of b per thread: aim for
// one block per SM instead, all resident in one wave (2 per SM fit by
// registers) so that every block's L2 prefetch of b is issued at the start.
constexpr int kTargetBlocksRows = 128;

struct MultirowParams {
  const void* a;
  const void* b;
  const void* bias;
  void* out;
  std::int64_t M, N, K;
  std::int64_t a_row_stride, a_col_stride;
  std::int64_t b_row_stride;  // along K; b's column stride is 1
  std::int64_t out_row_stride, out_col_stride, bias_stride;
  int column_groups;  // per block: 1, 2, 4 or 8 (CT)
  bool accumulate;
};

template <class T>
struct ColumnGroup;  // V columns of T: one 16-byte load of a row of b
template <>
struct ColumnGroup<float> {
  static constexpr int V = 4;
};
template <>
struct ColumnGroup<__half> {
  static constexpr int V = 8;
};
template <>
struct ColumnGroup<__nv_bfloat16> {
  static constexpr int V = 8;
};

using gemv::from_f;
using gemv::prefetch_l2;
using gemv::to_f;

// The V columns [n0, n0 + V) of b's row at `row`, widened; columns at or
// past N (the last group of an N that is not a multiple of V) read as 0
// without touching memory.
template <class T>
__device__ __forceinline__ void widen(const uint4& raw, float* f) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int j = 0; j < ColumnGroup<T>::V; ++j) f[j] = to_f(e[j]);
}
template <class T>
__device__ __forceinline__ uint4 load_row(const T* row, bool full, int valid) {
  if (full) return __ldg(reinterpret_cast<const uint4*>(row));
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int j = 0; j < ColumnGroup<T>::V; ++j) e[j] = j < valid ? row[j] : from_f<T>(0.0f);
  return raw;
}

// Where a lane's share of the R sums ended up after fold_scatter: sums
// [off, off + n) of its column group, written out only by owners (several
// lanes hold the same sum once R is smaller than the lanes folded).
struct Folded {
  int off, n;
  bool owner;
};

// Sums r[R] over the lanes of one column group (lanes whose lane % ct is
// equal) by recursive halving: at each of the 5 - log2(ct) steps a lane
// sends half of its live sums to its partner and adds the other half, so a
// warp issues R/2 + R/4 + ... shuffles where a butterfly of every sum issues
// R x (5 - log2 ct): 62 against 320 for 16 rows of 4 f32 columns at ct = 1.
// The sum order is fixed by the lane bits, so results stay deterministic.
template <int R>
__device__ __forceinline__ Folded fold_scatter(float (&r)[R], int lane, int ct) {
  Folded f{0, R, true};
#pragma unroll
  for (int l = 0; l < 5; ++l) {
    const int sh = 16 >> l;
    if (sh < ct) continue;  // warp-uniform: ct is one value per launch
    const bool hi = (lane & sh) != 0;
    const int n = R >> l;  // live sums before this step (a constant once unrolled)
    if (n >= 2) {
      const int h = n / 2;
#pragma unroll
      for (int i = 0; i < R / 2; ++i) {
        if (i < h) {
          const float send = hi ? r[i] : r[i + h];
          const float keep = hi ? r[i + h] : r[i];
          r[i] = keep + __shfl_xor_sync(0xffffffffu, send, sh);
        }
      }
      f.off += hi ? h : 0;
      f.n = h;
    } else {
      r[0] += __shfl_xor_sync(0xffffffffu, r[0], sh);
      f.owner = f.owner && !hi;
    }
  }
  return f;
}

template <class T, int MR>
__global__ void __launch_bounds__(kThreads) gemv_multirow_kernel(const MultirowParams p) {
  constexpr int V = ColumnGroup<T>::V;
  constexpr int kU = MR * V >= 64 ? 4 : 8;  // rows in flight per thread (registers)
  extern __shared__ float smem[];           // a as f32 [MR][K], then the warps' partials
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int ct = p.column_groups, ks = kThreads / ct;  // column groups, K slices
  const int c = lane % ct;                             // this thread's column group in the block
  const int slice = warp * (32 / ct) + lane / ct;
  const std::int64_t n0 = (std::int64_t(blockIdx.x) * ct + c) * V;
  const bool active = n0 < p.N;
  const bool full = n0 + V <= p.N;
  const int valid = active ? static_cast<int>(p.N - n0 < V ? p.N - n0 : V) : 0;
  const T* b = static_cast<const T*>(p.b) + n0;
  const std::int64_t K = p.K;

  {  // b is read-only here: warm L2 with this block's rows while the previous kernel drains
    const std::int64_t g0 = std::int64_t(blockIdx.x) * ct * V;
    const std::int64_t span = (p.N - g0 < std::int64_t(ct) * V ? p.N - g0 : std::int64_t(ct) * V) *
                              std::int64_t(sizeof(T));
    const char* base = static_cast<const char*>(p.b) + g0 * std::int64_t(sizeof(T));
    for (std::int64_t k = t; k < K; k += kThreads) {
      const char* r = base + k * p.b_row_stride * std::int64_t(sizeof(T));
      prefetch_l2(r);
      // The group's bytes cross a 128-byte line: ask for the second one too.
      if ((reinterpret_cast<std::uintptr_t>(r) ^ reinterpret_cast<std::uintptr_t>(r + span - 1)) >=
          128)
        prefetch_l2(r + span - 1);
    }
  }
  grid_dependency_wait();
  allow_dependents();

  // This block's rows: [row0, row0 + rows) (blockIdx.y > 0 only when the
  // launch splits M > 8 into blocks of 8 rows).
  const std::int64_t row0 = std::int64_t(blockIdx.y) * MR;
  const int rows = static_cast<int>(p.M - row0 < MR ? p.M - row0 : MR);
  const T* a = static_cast<const T*>(p.a) + row0 * p.a_row_stride;
  if constexpr (MR == 1) {
    for (std::int64_t i = t; i < MR * K; i += kThreads) {
      const std::int64_t m = i / K, k = i - m * K;
      smem[i] = m < rows ? to_f(a[m * p.a_row_stride + k * p.a_col_stride]) : 0.0f;
    }
  } else {
    // Rows unrolled, no division: the MR loads of one k are in flight at
    // once (a 64-bit i / K per element and a load-store chain made every
    // row an L2 round trip of its own; docs/log/ops.md, the multi-row
    // kernel's diagnosis).
    for (std::int64_t k = t; k < K; k += kThreads) {
      float v[MR];
#pragma unroll
      for (int m = 0; m < MR; ++m)
        v[m] = m < rows ? to_f(a[m * p.a_row_stride + k * p.a_col_stride]) : 0.0f;
#pragma unroll
      for (int m = 0; m < MR; ++m) smem[m * K + k] = v[m];
    }
  }
  __syncthreads();

  float acc[MR][V];
#pragma unroll
  for (int m = 0; m < MR; ++m)
#pragma unroll
    for (int j = 0; j < V; ++j) acc[m][j] = 0.0f;
  if (active) {
    for (std::int64_t k0 = slice; k0 < K; k0 += std::int64_t(ks) * kU) {
      uint4 raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const std::int64_t k = k0 + std::int64_t(u) * ks;
        if (k < K) raw[u] = load_row(b + k * p.b_row_stride, full, valid);
      }
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const std::int64_t k = k0 + std::int64_t(u) * ks;
        if (k < K) {
          float w[V];
          widen<T>(raw[u], w);
#pragma unroll
          for (int m = 0; m < MR; ++m) {
            const float x = smem[m * K + k];
#pragma unroll
            for (int j = 0; j < V; ++j) acc[m][j] = fmaf(x, w[j], acc[m][j]);
          }
        }
      }
    }
  }

  float* part = smem;  // [warp][group][MR][V], once a is no longer read
  if constexpr (MR == 1) {
    // Lanes of one column group (lane % ct equal) hold different rows: fold them.
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
      for (int j = 0; j < V; ++j)
        for (int sh = 16; sh >= ct; sh >>= 1)
          acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], sh);
    __syncthreads();  // every warp is done reading a: its space takes the partials
    if (lane < ct) {
#pragma unroll
      for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int j = 0; j < V; ++j) part[((warp * ct + lane) * MR + m) * V + j] = acc[m][j];
    }
  } else {
    const Folded f = fold_scatter<MR * V>(reinterpret_cast<float(&)[MR * V]>(acc), lane, ct);
    __syncthreads();  // every warp is done reading a: its space takes the partials
    const float* r = &acc[0][0];
    float* mine = part + (warp * ct + c) * MR * V + f.off;
    if (f.owner) {
#pragma unroll
      for (int i = 0; i < MR * V; ++i)
        if (i < f.n) mine[i] = r[i];
    }
  }
  __syncthreads();
  const int outs = ct * rows * V;  // (group, row, column) of this block
  for (int i = t; i < outs; i += kThreads) {
    const int j = i % V, m = (i / V) % rows, g = i / (V * rows);
    const std::int64_t n = (std::int64_t(blockIdx.x) * ct + g) * V + j;
    if (n >= p.N) continue;
    float r = 0.0f;
    for (int w = 0; w < kWarps; ++w) r += part[((w * ct + g) * MR + m) * V + j];
    if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bias_stride]);
    T* o = static_cast<T*>(p.out) + (row0 + m) * p.out_row_stride + n * p.out_col_stride;
    if (p.accumulate) r += to_f(*o);
    *o = from_f<T>(r);
  }
}

// STRATA_GEMV_ROWS_CT: 1, 2, 4 or 8 forces the column groups per block, in
// a tuning build only (elsewhere it is an error: tuning_build.hpp); 0 (unset
// or anything else) picks them per call.
int forced_ct() {
  static const int ct = [] {
    const std::int64_t v = tuning().gemv_rows_ct;
    if (v != 0) require_tuning_build("STRATA_GEMV_ROWS_CT", std::to_string(v));
    return v == 1 || v == 2 || v == 4 || v == 8 ? int(v) : 0;
  }();
  return ct;
}

// Whether M > 8 runs as blocks of 8 rows (grid.y = 2; b read twice, the
// second time mostly from L2) instead of one 16-row block: 16 rows of f32
// sums of 8 f16/bf16 columns take ~180 registers (1 block per SM), of 4 f32
// columns ~120 (2 per SM). STRATA_GEMV_ROWS_SPLIT=0|1 forces it in a tuning
// build only (elsewhere it is an error); 16-bit blocks of 16 rows exist only
// there.
bool split_rows(bool wide) {
  const Toggle forced = tuning().gemv_rows_split;
  if (forced == Toggle::automatic) return !wide;
  require_tuning_build("STRATA_GEMV_ROWS_SPLIT", forced == Toggle::on ? "1" : "0");
  return forced == Toggle::on;
}

// The most rows a call may have to come here: 16 (kMaxRows) unless
// STRATA_GEMV_ROWS_MAX_M=<1..16> says fewer (A/B runs; the hidden
// [gemv_multirow_all] test reruns the cases with 1). 2-16 rows beat
// cublasGemmEx called directly in f32, f32 medium and bf16
// (docs/log/ops.md, "Multi-row gemv_rows").
int max_rows() {
  static const int m =
      gemv::rows_limit("STRATA_GEMV_ROWS_MAX_M", tuning().gemv_rows_max_m, kMaxRows, kMaxRows);
  return m;
}

// More than one row comes here only while b is at most this many elements
// (4M: 8 MiB of bf16, 16 MiB of f32). The multi-row timings are of b up to
// 512 x 1536; past that, b's read sets the time for both this
// kernel and cuBLAS, and cuBLAS's tiles reuse it across the rows on chip
// where this kernel's 8-row blocks read it twice.
constexpr std::int64_t kMaxMultiRowB = std::int64_t(1) << 22;

int rows_for(std::int64_t M) { return M <= 1 ? 1 : M <= 2 ? 2 : M <= 4 ? 4 : M <= 8 ? 8 : 16; }

// The widest column group count (longest contiguous piece of a row per
// warp) that still gives `target` blocks; 1 when none does.
int pick_ct(std::int64_t groups, std::int64_t row_blocks, int target) {
  if (const int f = forced_ct(); f != 0) return f;
  for (int ct = kMaxCt; ct > 1; ct /= 2)
    if ((groups + ct - 1) / ct * row_blocks >= target) return ct;
  return 1;
}

template <class T, int MR>
void launch(MultirowParams p, cudaStream_t st) {
  constexpr int V = ColumnGroup<T>::V;
  const std::int64_t groups = (p.N + V - 1) / V;
  const std::int64_t row_blocks = (p.M + MR - 1) / MR;
  p.column_groups = pick_ct(groups, row_blocks, MR == 1 ? kTargetBlocks : kTargetBlocksRows);
  const std::int64_t staged = std::int64_t(MR) * p.K;
  const std::int64_t partials = std::int64_t(kWarps) * p.column_groups * MR * V;
  const std::size_t smem =
      sizeof(float) * static_cast<std::size_t>(staged > partials ? staged : partials);
  auto* kernel = gemv_multirow_kernel<T, MR>;
  // Past the default dynamic limit (long K only): opt in to the most any
  // call may use, so that concurrent calls never lower each other's limit.
  if (smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(sizeof(float) * kMaxStaged)));
  const dim3 grid(static_cast<unsigned>((groups + p.column_groups - 1) / p.column_groups),
                  static_cast<unsigned>(row_blocks)),
      block(kThreads);
  CUDA_CHECK(launch_kernel(kernel, grid, block, smem, st, p));
}

template <class T>
void run(const MatmulArgs& g) {
  MultirowParams p = gemv::call_params<MultirowParams>(g);
  p.a_row_stride = g.a.strides[0];
  p.a_col_stride = g.a.strides[1];
  p.b_row_stride = g.b.strides[0];
  const cudaStream_t st = static_cast<cudaStream_t>(g.stream);
  const int mr = p.M > 8 && split_rows(sizeof(T) == 4) ? 8 : rows_for(p.M);
  if (!dispatch_int<1, 2, 4, 8>(mr, [&](auto rows) { launch<T, decltype(rows)::value>(p, st); })) {
    // 16-bit rows reach here only when STRATA_GEMV_ROWS_SPLIT=0, which
    // split_rows allows in a tuning build only.
    if constexpr (sizeof(T) == 4 || kTuningBuild) launch<T, kMaxRows>(p, st);
  }
}

}  // namespace

const char* matmul_gemv_multirow_supports(const MatmulArgs& g) {
  if (const char* why = gemv::refusal(g)) return why;
  if (g.M < 1 || g.M > max_rows()) return "more rows than STRATA_GEMV_ROWS_MAX_M (default 16)";
  if (g.M > 1 && g.K * g.N > kMaxMultiRowB) return "more than one row and b over 4M elements";
  if (g.K < 1) return "K = 0";
  if (rows_for(g.M) * g.K > kMaxStaged) return "a too large to stage (rows x K > 32768)";
  if (g.N > 1 && g.b.strides[1] != 1) return "b's rows not unit-stride";
  const std::int64_t V = g.out.dtype == DType::f32 ? 4 : 8;
  if (reinterpret_cast<std::uintptr_t>(g.b.data) % 16 != 0 || (g.K > 1 && g.b.strides[0] % V != 0))
    return "b's rows not 16-byte aligned";
  return nullptr;
}

// Testing hook (tests/cuda/test_cuda_gemv_multirow.cpp declares it): the most
// rows a call may have to take this kernel in this process.
int gemv_multirow_max_rows_for_test() { return max_rows(); }

void matmul_gemv_multirow(const MatmulArgs& g) {
  gemv::for_dtype(g.out.dtype, [&](auto t) { run<typename decltype(t)::type>(g); });
}

}  // namespace strata::cuda
