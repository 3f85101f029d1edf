// Matrix-vector products on cuda: out [M, N] (+)= a [M, K] b [K, N] (+ bias)
// for 1 <= M <= 8 rows with a's rows and b's columns unit-stride along K:
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
#include "cuda/matmul/gemv_common.cuh"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/pdl_launch.cuh"

namespace strata::cuda {
namespace {

constexpr int kMaxRows = 8;
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

using gemv::disabled;

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

template <class T>
void run(const MatmulArgs& g) {
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
  else
    launch<T, kMaxRows>(p, vec, st);
}

}  // namespace

std::string matmul_gemv_supports(const MatmulArgs& g) {
  if (disabled()) return "STRATA_CUDA_GEMV=0";
  if (g.out.dtype == DType::f64) return "f64 goes to cuBLAS";
  if (g.batch_rank != 0) return "batched";
  if (g.M < 1 || g.M > kMaxRows) return "more than 8 rows";
  if (g.K < 1 || g.K > kMaxK) return "K outside [1, 16384]";
  if (g.K > 1 && (g.a.strides[1] != 1 || g.b.strides[0] != 1))
    return "a's rows or b's columns not unit-stride";
  return "";
}

void matmul_gemv(const MatmulArgs& g) {
  switch (g.out.dtype) {
    case DType::f32:
      run<float>(g);
      break;
    case DType::bf16:
      run<__nv_bfloat16>(g);
      break;
    default:
      run<__half>(g);
      break;
  }
}

}  // namespace strata::cuda
