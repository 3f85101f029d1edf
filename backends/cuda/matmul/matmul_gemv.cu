// Matrix-vector products on cuda: out [M, N] (+)= a [M, K] b [K, N] (+ bias)
// for 1 <= M <= 16 rows (9-16 only with STRATA_GEMV_MAX_M, below) with a's
// rows and b's columns unit-stride along K:
// a linear's x [M, K] against its weight W [N, K] seen as W^T, i.e. every
// projection of a decode step. The bytes of W are the whole cost (1-6 MB per
// projection of the benchmark model, about 1 us of HBM bandwidth each), yet
// cuBLAS's kernels took 4-6 us each inside a graph (docs/models.md): they
// cannot start before the previous kernel has drained, and their first
// loads wait a full memory round trip.
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
// (gemv16_mma.cuh); with STRATA_GEMV_MAX_M=<9..16>, the other calls of
// 9-16 rows run a second kernel (column_pair) that gives each warp two
// columns, so that every load of a feeds both; the reasoning is beside it.
// The row rules are at max_rows() below.
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
#include "cuda/matmul/gemv16_mma.cuh"
#include "cuda/matmul/gemv_common.cuh"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/pdl_launch.cuh"
#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {
namespace {

constexpr int kMaxRows = 8;                            // rows of gemv_kernel
constexpr int kMaxRows16 = 16;                         // rows of gemv16_kernel
constexpr int kWarps = 4;                              // columns per block
constexpr int kUnroll = 8;                             // 16-byte loads in flight per lane
constexpr std::int64_t kMaxK = std::int64_t(1) << 14;  // one warp streams a whole row

struct GemvParams {
  const void* a;
  const void* b;
  const void* bias;
  void* out;
  std::int64_t M, N, K;
  std::int64_t am, bn, om, on, bs;  // a's row stride, b's column stride, out's, bias's
  bool accumulate;
};

template <class T>
struct Lanes;  // n elements of T in one 16-byte load, widened to float
template <>
struct Lanes<float> {
  static constexpr int n = 4;
  using Raw = float4;
  __device__ static void widen(const Raw& v, float* f) {
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
  }
};
template <class H2, float2 (*cvt)(H2)>
struct HalfLanes {
  static constexpr int n = 8;
  using Raw = uint4;
  __device__ static void widen(const Raw& v, float* f) {
    const auto* h = reinterpret_cast<const H2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = cvt(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
};
__device__ float2 bf2_to_f2(__nv_bfloat162 x) { return __bfloat1622float2(x); }
__device__ float2 h2_to_f2(__half2 x) { return __half22float2(x); }
template <>
struct Lanes<__nv_bfloat16> : HalfLanes<__nv_bfloat162, bf2_to_f2> {};
template <>
struct Lanes<__half> : HalfLanes<__half2, h2_to_f2> {};

using gemv::from_f;
using gemv::prefetch_l2;
using gemv::to_f;

// Column n of out: lanes split W's row n along K in 16-byte pieces (VEC) or
// single elements, each multiplying into all MR rows of a.
template <class T, int MR, bool VEC>
__device__ __forceinline__ void column(const GemvParams& p, std::int64_t n, int lane) {
  using L = Lanes<T>;
  constexpr int V = L::n;
  const T* a = static_cast<const T*>(p.a);
  const T* w = static_cast<const T*>(p.b) + n * p.bn;
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
              L::widen(reinterpret_cast<const typename L::Raw*>(a + m * p.am)[c], xf);
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
        if (m < M) acc[m] = fmaf(to_f(a[m * p.am + k]), wf, acc[m]);
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
    if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bs]);
    T* o = static_cast<T*>(p.out) + lane * p.om + n * p.on;
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
    const char* row = static_cast<const char*>(p.b) + first * p.bn * std::int64_t(sizeof(T));
    const std::int64_t bytes = p.K * std::int64_t(sizeof(T));
    for (std::int64_t off = std::int64_t(lane) * 128; off < bytes; off += 32 * 128)
      prefetch_l2(row + off);
  }
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t n = first; n < p.N; n += stride) column<T, MR, VEC>(p, n, lane);
}

// 9-16 rows. Why a second kernel and why two columns per warp: each 16-byte
// load of W feeds M 16-byte loads of a (L1 hits: 16 rows of K = 512 are
// 16-32 KB), so at 16 rows a's loads are 16 of every 17 and L1 bandwidth,
// not W's bytes from HBM, sets the time. At 16 x 512 x 1408 f32, one column per warp moves
// 1408 x 16 x 512 x 4 B = 46 MB of a through L1 (~12 columns on the busiest
// SM x 68 loads x 4 wavefronts ~ 3300 clocks ~ 1.7 us at 128 B/clock)
// against W's 2.9 MB from HBM (~0.7 us). Two columns per warp share every
// load of a: ~1700 clocks (~0.9 us), near W's floor; bf16 halves both.
// Splitting the rows over two warps or blocks instead reads W twice and a
// just as often. Each lane keeps 2 x 16 f32 sums (32 registers) and up to
// 2 x kUnroll16 loads of W in flight; a warp folds its 32 sums with a halving
// reduce-scatter (fold32: 31 shuffles, lane l ends with sum l) where a
// butterfly of each sum would take 160. Blocks of two warps (4 columns, as
// gemv_kernel's blocks of four) spread N = 1408 over 352 blocks.
constexpr int kWarps16 = 2;
// Loads of W in flight per lane and column: 2 x 4, as many per lane as
// gemv_kernel's kUnroll (2 x 8: ptxas held f32 to 128 registers and spilled).
constexpr int kUnroll16 = kUnroll / 2;

// Lane l's share after summing r[32] over the warp: r[l] of all 32 lanes
// added, in an order fixed by the lane bits (deterministic). At each step a
// lane sends the half of its live sums its partner keeps and adds the half
// it keeps. SH is a template argument so that every index into r is a
// constant (a loop over SH was left rolled and put r in local memory).
template <int SH>
__device__ __forceinline__ void fold_step(float (&r)[32], int lane) {
  const bool hi = (lane & SH) != 0;  // keeps the upper half: live sums [SH, 2 SH)
#pragma unroll
  for (int i = 0; i < SH; ++i) {
    const float send = hi ? r[i] : r[i + SH];
    const float keep = hi ? r[i + SH] : r[i];
    r[i] = keep + __shfl_xor_sync(0xffffffffu, send, SH);
  }
  if constexpr (SH > 1) fold_step<SH / 2>(r, lane);
}
__device__ __forceinline__ float fold32(float (&r)[32], int lane) {
  fold_step<16>(r, lane);
  return r[0];
}

// Columns n0 and n0 + 1 of out (only n0 when n0 + 1 == N: its row of W is
// then read twice and its sums dropped), all M <= 16 rows: as column(), but
// each load of a multiplies into both columns. a's 16-byte pieces are read
// with __ldg: as a plain load widened at once, the compiler split each into
// four or eight 2-4 byte loads for f16/bf16 (PTX), 4x the L1 wavefronts. a
// is only read after grid_dependency_wait(), as gemv_rows reads b. acc[c * 16 + m] is column c,
// row m, so after fold32 lane l holds column l / 16, row l % 16.
template <class T, bool VEC>
__device__ __forceinline__ void column_pair(const GemvParams& p, std::int64_t n0, int lane) {
  using L = Lanes<T>;
  constexpr int V = L::n, R = kMaxRows16;
  const T* a = static_cast<const T*>(p.a);
  const std::int64_t n1 = n0 + 1 < p.N ? n0 + 1 : n0;
  const T* w0 = static_cast<const T*>(p.b) + n0 * p.bn;
  const T* w1 = static_cast<const T*>(p.b) + n1 * p.bn;
  const int M = static_cast<int>(p.M);
  float acc[2 * R];
#pragma unroll
  for (int i = 0; i < 2 * R; ++i) acc[i] = 0.0f;
  if constexpr (VEC) {
    const std::int64_t chunks = p.K / V;
    for (std::int64_t c0 = lane; c0 < chunks; c0 += 32 * kUnroll16) {
      typename L::Raw wv0[kUnroll16], wv1[kUnroll16];
#pragma unroll
      for (int u = 0; u < kUnroll16; ++u) {
        const std::int64_t c = c0 + 32 * u;
        if (c < chunks) {
          wv0[u] = reinterpret_cast<const typename L::Raw*>(w0)[c];
          wv1[u] = reinterpret_cast<const typename L::Raw*>(w1)[c];
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll16; ++u) {
        const std::int64_t c = c0 + 32 * u;
        if (c < chunks) {
          float f0[V], f1[V];
          L::widen(wv0[u], f0);
          L::widen(wv1[u], f1);
#pragma unroll
          for (int m = 0; m < R; ++m) {
            if (m < M) {
              float xf[V];
              L::widen(__ldg(reinterpret_cast<const typename L::Raw*>(a + m * p.am) + c), xf);
#pragma unroll
              for (int j = 0; j < V; ++j) {
                acc[m] = fmaf(xf[j], f0[j], acc[m]);
                acc[R + m] = fmaf(xf[j], f1[j], acc[R + m]);
              }
            }
          }
        }
      }
    }
  } else {
    for (std::int64_t k = lane; k < p.K; k += 32) {
      const float f0 = to_f(w0[k]), f1 = to_f(w1[k]);
#pragma unroll
      for (int m = 0; m < R; ++m) {
        if (m < M) {
          const float x = to_f(a[m * p.am + k]);
          acc[m] = fmaf(x, f0, acc[m]);
          acc[R + m] = fmaf(x, f1, acc[R + m]);
        }
      }
    }
  }
  float r = fold32(acc, lane);
  const int m = lane % R;
  const std::int64_t n = n0 + lane / R;
  if (m < M && n < p.N) {
    if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bs]);
    T* o = static_cast<T*>(p.out) + m * p.om + n * p.on;
    if (p.accumulate) r += to_f(*o);
    *o = from_f<T>(r);
  }
}

template <class T, bool VEC>
__global__ void __launch_bounds__(kWarps16 * 32) gemv16_kernel(const GemvParams p) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::int64_t first = 2 * (std::int64_t(blockIdx.x) * kWarps16 + warp);
  const std::int64_t stride = 2 * std::int64_t(gridDim.x) * kWarps16;
  // W is read-only here: warm L2 with this warp's first two rows (one when
  // N is odd and this is the last) while the previous kernel drains.
  const std::int64_t bytes = p.K * std::int64_t(sizeof(T));
  for (std::int64_t n = first; n < p.N && n < first + 2; ++n) {
    const char* row = static_cast<const char*>(p.b) + n * p.bn * std::int64_t(sizeof(T));
    for (std::int64_t off = std::int64_t(lane) * 128; off < bytes; off += 32 * 128)
      prefetch_l2(row + off);
  }
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t n = first; n < p.N; n += stride) column_pair<T, VEC>(p, n, lane);
}

// The 16-bit calls of 9-16 rows that meet gemv16_mma.cuh's 16-byte
// preconditions run the tensor-core kernel there (run s14r5, H200: bf16
// linear 16 x 512 -> 1408 3.75 us against 7.52 for cuBLAS called directly;
// the batch-16 decode step 0.280 -> 0.254 ms; docs/ops.md).
// STRATA_GEMV16_MMA=0 turns it off for A/B runs (read once per process;
// unset, empty or 1: on); the hidden [gemv16_ffma_all] test reruns the
// cases with it off.
bool mma16_enabled() {
  return tuning().gemv16_mma;
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
  const bool fits =
      p.K % 8 == 0 && p.am % 8 == 0 && (p.N == 1 || p.bn % 8 == 0) && aligned(p.a) && aligned(p.b);
  return bytes == 2 && fits && mma16_enabled() ? Path::gemv16_mma : Path::gemv16;
}

template <class T>
void launch16(const GemvParams& p, bool vec, cudaStream_t st) {
  if constexpr (sizeof(T) == 2) {
    if (path(p, sizeof(T)) == Path::gemv16_mma) return gemv16mma::launch<T>(p, st);
  }
  constexpr std::int64_t cols = 2 * kWarps16;  // per block
  const std::int64_t blocks = std::min<std::int64_t>((p.N + cols - 1) / cols, 1 << 16);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kWarps16 * 32);
  if (vec)
    CUDA_CHECK(launch_kernel(gemv16_kernel<T, true>, grid, block, 0, st, p));
  else
    CUDA_CHECK(launch_kernel(gemv16_kernel<T, false>, grid, block, 0, st, p));
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
  GemvParams p{};
  p.a = g.a.data;
  p.b = g.b.data;
  p.bias = g.bias.data;
  p.out = g.out.data;
  p.M = g.M;
  p.N = g.N;
  p.K = g.K;
  p.am = g.a.strides[0];
  p.bn = g.b.strides[1];
  p.om = g.out.strides[0];
  p.on = g.out.strides[1];
  p.bs = g.bias.data != nullptr ? g.bias.strides[0] : 0;
  p.accumulate = g.accumulate;
  return p;
}

// W up to this many elements: f32 calls of 9-16 rows take gemv16_kernel
// when STRATA_GEMV_MAX_M is unset. It beat cuBLAS called directly at
// 16 x 512 -> 1408 (720,896 elements: 5.6-5.8 us against 11.9-14.2, runs
// s14r2 and s14r5), but in bf16 at the decode model's shapes (W of 0.6M to
// 39M elements) it made the batch-16 step 69% slower (run s14r1): its FMAs
// and x's L1 loads, not W's bytes, set its time there. Larger f32 W stay
// on cuBLAS until gemv16 is timed at those shapes.
constexpr std::int64_t kF32SmallW = std::int64_t(1) << 20;

// With STRATA_GEMV_MAX_M unset, whether a call of 9-16 rows comes here:
// the 16-bit calls the tensor cores take, and f32 calls with K > 1 (K = 1
// is gemv_rows' outer product) and a small W.
bool takes_9_to_16(const MatmulArgs& g) {
  if (g.out.dtype == DType::f32) return g.K > 1 && g.N * g.K <= kF32SmallW;
  return path(params(g), itemsize(g.out.dtype)) == Path::gemv16_mma;
}

template <class T>
void run(const MatmulArgs& g) {
  const GemvParams p = params(g);
  constexpr int V = Lanes<T>::n;
  const auto aligned = [](const void* q) { return reinterpret_cast<std::uintptr_t>(q) % 16 == 0; };
  const bool vec = p.K % V == 0 && (p.M == 1 || p.am % V == 0) && (p.N == 1 || p.bn % V == 0) &&
                   aligned(p.a) && aligned(p.b);
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

std::string matmul_gemv_supports(const MatmulArgs& g) {
  if (const char* why = gemv::refusal(g)) return why;
  if (g.M < 1 || g.M > kMaxRows16) return "more than 16 rows";
  if (g.M > max_rows() && (env_rows() > 0 || !takes_9_to_16(g)))
    return "9-16 rows: only on the tensor cores, or in f32 with W up to 2^20 elements "
           "(STRATA_GEMV_MAX_M=16 takes them all)";
  if (g.K < 1 || g.K > kMaxK) return "K outside [1, 16384]";
  if (g.K > 1 && (g.a.strides[1] != 1 || g.b.strides[0] != 1))
    return "a's rows or b's columns not unit-stride";
  return "";
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
