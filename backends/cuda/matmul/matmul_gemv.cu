// Matrix-vector products on cuda: out [M, N] (+)= a [M, K] b [K, N] (+ bias)
// for 1 <= M <= 16 rows (9-16 only with STRATA_GEMV_MAX_M, below) with a's
// rows and b's columns unit-stride along K:
// a linear's x [M, K] against its weight W [N, K] seen as W^T, i.e. every
// projection of a decode step. The bytes of W are the whole cost, yet
// cuBLAS's kernels took several times W's HBM time inside a graph
// (docs/log/models.md, the decode step's projections): they cannot start
// before the previous kernel has drained, and their first loads wait a
// full memory round trip.
//
// Why this kernel is faster where an earlier hand-written one (a block per
// column, removed in b79b39b) was not:
//  * launched with programmatic dependent launch (pdl_launch.cuh), it is
//    resident while the previous kernel (a norm, attention) still runs, and
//    it asks L2 for its rows of W *before* grid_dependency_wait(): an L2
//    prefetch moves no data into registers or L1, and L2 is where the
//    previous kernel's writes land, so even a W the previous kernel wrote
//    is read correctly after the wait;
//  * one warp per output column, each lane keeping up to kUnroll 16-byte
//    loads in flight, no shared memory and no block barrier: a column is
//    a shuffle reduction;
//  * it lets its own dependents launch at once (allow_dependents()), so the
//    row kernel behind it (rotary, a norm) is resident before it ends.
// bf16/f16 at 9-16 rows with 16-byte rows run on the tensor cores
// (gemv16_mma.cuh); f32 calls of 9-16 rows with a small W, and with
// STRATA_GEMV_MAX_M=<9..16> every other call of 9-16 rows, run a second
// kernel (gemv16_ffma.cuh) that gives each warp two columns, so that every
// load of a feeds both; the reasoning is beside it. The row rules are at
// max_rows() and takes_9_to_16() below.
// Sums run in f32 (f16/bf16 widened), out's old value and the bias added
// before the one rounding, as the MatmulArgs contract says.
// STRATA_CUDA_GEMV=0 sends these calls back to cuBLAS (for A/B runs);
// STRATA_CUDA_LAUNCH (launch_mode.cuh) launches without PDL, or with it only
// inside graphs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/matmul/gemv16_ffma.cuh"
#include "cuda/matmul/gemv16_mma.cuh"
#include "cuda/matmul/gemv_common.cuh"
#include "cuda/matmul/gemv_params.cuh"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/pdl_launch.cuh"
#include "cuda/tuning_build.hpp"
#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {
namespace {

constexpr int kMaxRows = 8;                            // rows of gemv_kernel
constexpr int kWarps = 4;                              // columns per block
constexpr int kUnroll = 8;                             // 16-byte loads in flight per lane
constexpr std::int64_t kMaxK = std::int64_t(1) << 14;  // one warp streams a whole row
static_assert(kUnroll16 * 2 == kUnroll, "gemv16_kernel keeps half gemv_kernel's loads per column");

// Column n of out: lanes split W's row n along K in 16-byte pieces (VEC) or
// single elements, each multiplying into all MR rows of a.
template <class T, int MR, bool VEC>
__device__ __forceinline__ void column(const GemvParams& p, std::int64_t n, int lane) {
  using L = Lanes<T>;
  constexpr int V = L::n;
  const T* a = static_cast<const T*>(p.a);
  const T* w = static_cast<const T*>(p.b) + n * p.b_col_stride;
  const int M = static_cast<int>(p.M);
  float acc[MR];
#pragma unroll
  for (int m = 0; m < MR; ++m) acc[m] = 0.0f;
  if constexpr (VEC) {
    const std::int64_t chunks = p.K / V;
    for (std::int64_t c0 = lane; c0 < chunks; c0 += 32 * kUnroll) {
      typename L::Raw wv[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t c = c0 + 32 * u;
        if (c < chunks) wv[u] = reinterpret_cast<const typename L::Raw*>(w)[c];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const std::int64_t c = c0 + 32 * u;
        if (c < chunks) {
          float wf[V];
          L::widen(wv[u], wf);
#pragma unroll
          for (int m = 0; m < MR; ++m) {
            if (m < M) {
              float xf[V];
              L::widen(reinterpret_cast<const typename L::Raw*>(a + m * p.a_row_stride)[c], xf);
#pragma unroll
              for (int j = 0; j < V; ++j) acc[m] = fmaf(xf[j], wf[j], acc[m]);
            }
          }
        }
      }
    }
  } else {
    for (std::int64_t k = lane; k < p.K; k += 32) {
      const float wf = to_f(w[k]);
#pragma unroll
      for (int m = 0; m < MR; ++m)
        if (m < M) acc[m] = fmaf(to_f(a[m * p.a_row_stride + k]), wf, acc[m]);
    }
  }
  float mine = 0.0f;  // lane m keeps row m's sum
#pragma unroll
  for (int m = 0; m < MR; ++m) {
#pragma unroll
    for (int sh = 16; sh > 0; sh >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], sh);
    if (lane == m) mine = acc[m];
  }
  if (lane < M) {
    float r = mine;
    if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bias_stride]);
    T* o = static_cast<T*>(p.out) + lane * p.out_row_stride + n * p.out_col_stride;
    if (p.accumulate) r += to_f(*o);
    *o = from_f<T>(r);
  }
}

template <class T, int MR, bool VEC>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const GemvParams p) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t first = std::int64_t(blockIdx.x) * kWarps + warp;
  const std::int64_t stride = std::int64_t(gridDim.x) * kWarps;
  if (first < p.N) {  // W is read-only here: warm L2 while the previous kernel drains
    const char* row =
        static_cast<const char*>(p.b) + first * p.b_col_stride * std::int64_t(sizeof(T));
    const std::int64_t bytes = p.K * std::int64_t(sizeof(T));
    for (std::int64_t off = std::int64_t(lane) * 128; off < bytes; off += 32 * 128)
      prefetch_l2(row + off);
  }
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t n = first; n < p.N; n += stride) column<T, MR, VEC>(p, n, lane);
}

// The 16-bit calls of 9-16 rows that meet gemv16_mma.cuh's 16-byte
// preconditions run the tensor-core kernel there: it halved the bf16 call
// against cuBLAS called directly and sped up the batch-16 decode step,
// where gemv16_kernel slowed it down (docs/log/ops.md, "linear with 9-16
// rows, measured").
// STRATA_GEMV16_MMA=0 sends them to gemv16_kernel instead, in a tuning
// build only (elsewhere it is an error: tuning_build.hpp); read once per
// process. The hidden [gemv16_ffma_all] test reruns the cases with it off.
bool mma16_enabled() {
  static const bool on = [] {
    if (!tuning().gemv16_mma) require_tuning_build("STRATA_GEMV16_MMA", "0");
    return tuning().gemv16_mma;
  }();
  return on;
}

// Which kernel run() launches for p (element size `bytes`).
enum class Path { gemv, gemv16, gemv16_mma };
Path path(const GemvParams& p, std::size_t bytes) {
  if (p.M <= kMaxRows) return Path::gemv;
  // 16 bytes = 8 elements: the mma kernel's loads of x and W rows need
  // K % 8 == 0, row strides that are multiples of 8 and 16-byte aligned
  // bases (W's stride is moot with one row). Otherwise gemv16 (its element
  // path) takes the call: an odd K, a window of a wider x or W.
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const bool fits = p.K % 8 == 0 && p.a_row_stride % 8 == 0 &&
                    (p.N == 1 || p.b_col_stride % 8 == 0) && aligned(p.a) && aligned(p.b);
  return bytes == 2 && fits && mma16_enabled() ? Path::gemv16_mma : Path::gemv16;
}

template <class T>
void launch16(const GemvParams& p, bool vec, cudaStream_t st) {
  if constexpr (sizeof(T) == 2) {
    if (path(p, sizeof(T)) == Path::gemv16_mma) return gemv16mma::launch<T>(p, st);
  }
  launch_gemv16_ffma<T>(p, vec, st);
}

// STRATA_GEMV_MAX_M=<1..16> (read once per process), 0 when unset.
int env_rows() {
  static const int m = gemv::rows_limit("STRATA_GEMV_MAX_M", tuning().gemv_max_m, 0, kMaxRows16);
  return m;
}

// The most rows a call may have to come here whatever its dtype and
// layout: STRATA_GEMV_MAX_M, else kMaxRows (8). The hidden [gemv_all] test
// reruns the cases with 16.
int max_rows() { return env_rows() > 0 ? env_rows() : kMaxRows; }

template <class T, int MR>
void launch(const GemvParams& p, bool vec, cudaStream_t st) {
  // Enough blocks for one column per warp up to a few waves; larger N loops.
  const std::int64_t blocks = std::min<std::int64_t>((p.N + kWarps - 1) / kWarps, 1 << 16);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kWarps * 32);
  if (vec)
    CUDA_CHECK(launch_kernel(gemv_kernel<T, MR, true>, grid, block, 0, st, p));
  else
    CUDA_CHECK(launch_kernel(gemv_kernel<T, MR, false>, grid, block, 0, st, p));
}

GemvParams params(const MatmulArgs& g) {
  GemvParams p = gemv::call_params<GemvParams>(g);
  p.a_row_stride = g.a.strides[0];
  p.b_col_stride = g.b.strides[1];
  return p;
}

// W up to this many elements: f32 calls of 9-16 rows take gemv16_kernel
// when STRATA_GEMV_MAX_M is unset. It beat cuBLAS called directly at
// 16 x 512 -> 1408 (720,896 elements), but in bf16 at the decode model's
// shapes (W of 0.6M to 39M elements) it made the batch-16 step slower: its
// FMAs and x's L1 loads, not W's bytes, set its time there
// (docs/log/ops.md, "linear with 9-16 rows, measured"). Larger f32 W stay
// on cuBLAS until gemv16 is timed at those shapes.
constexpr std::int64_t kF32SmallW = std::int64_t(1) << 20;

// With STRATA_GEMV_MAX_M unset, whether a call of 9-16 rows comes here:
// the 16-bit calls the tensor cores take, and f32 calls with K > 1 (K = 1
// is gemv_multirow's outer product) and a small W.
bool takes_9_to_16(const MatmulArgs& g) {
  if (g.out.dtype == DType::f32) return g.K > 1 && g.N * g.K <= kF32SmallW;
  return path(params(g), itemsize(g.out.dtype)) == Path::gemv16_mma;
}

template <class T>
void run(const MatmulArgs& g) {
  const GemvParams p = params(g);
  constexpr int V = Lanes<T>::n;
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const bool vec = p.K % V == 0 && (p.M == 1 || p.a_row_stride % V == 0) &&
                   (p.N == 1 || p.b_col_stride % V == 0) && aligned(p.a) && aligned(p.b);
  const cudaStream_t st = static_cast<cudaStream_t>(g.stream);
  if (p.M == 1)
    launch<T, 1>(p, vec, st);
  else if (p.M == 2)
    launch<T, 2>(p, vec, st);
  else if (p.M <= 4)
    launch<T, 4>(p, vec, st);
  else if (p.M <= kMaxRows)
    launch<T, kMaxRows>(p, vec, st);
  else
    launch16<T>(p, vec, st);
}

}  // namespace

const char* matmul_gemv_supports(const MatmulArgs& g) {
  if (const char* why = gemv::refusal(g)) return why;
  if (g.M < 1 || g.M > kMaxRows16) return "more than 16 rows";
  if (g.M > max_rows() && (env_rows() > 0 || !takes_9_to_16(g)))
    return "9-16 rows: only on the tensor cores, or in f32 with W up to 2^20 elements "
           "(STRATA_GEMV_MAX_M=16 takes them all)";
  if (g.K < 1 || g.K > kMaxK) return "K outside [1, 16384]";
  if (g.K > 1 && (g.a.strides[1] != 1 || g.b.strides[0] != 1))
    return "a's rows or b's columns not unit-stride";
  return nullptr;
}

// Testing hook (tests/cuda/test_cuda_gemv.cpp declares it): the most rows
// a call may have to take this kernel in this process.
int gemv_max_rows_for_test() { return max_rows(); }

// Testing hook (the same file): the kernel matmul_gemv(g) launches, "gemv",
// "gemv16" or "gemv16_mma", for a call the registry gives it.
std::string gemv_path_for_test(const MatmulArgs& g) {
  const std::size_t bytes = g.out.dtype == DType::f32 ? 4 : 2;
  switch (path(params(g), bytes)) {
    case Path::gemv:
      return "gemv";
    case Path::gemv16:
      return "gemv16";
    default:
      return "gemv16_mma";
  }
}

void matmul_gemv(const MatmulArgs& g) {
  gemv::for_dtype(g.out.dtype, [&](auto t) { run<typename decltype(t)::type>(g); });
}

}  // namespace strata::cuda
