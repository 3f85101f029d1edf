// Skinny products on cuda: out [M, N] (+)= a [M, K] b [K, N] (+ bias) for
// 1 <= M <= 8 rows, with a's rows and b's columns unit-stride along K -- a
// linear's x [M, K] against its weight W [N, K] seen as W^T: every
// projection of a decode step. cuBLAS runs these at 5-7 us each on the H200
// (ncu, 2026-12-01: gemv2T / nvjet kernels for 1 x 512 x 768 .. 1 x 1408 x
// 512), where their weight bytes need about 1 us at 3 TB/s; a decode step
// has 25 of them. Written by hand because no library call serves this
// shape at the speed of its bytes (cuBLASLt's heuristics pick few blocks for
// M = 1).
//
// One block per output column n (blocks striding over N): its threads
// stream W's row n along K (16-byte loads where aligned, several in flight
// per lane), each multiplying its slice into all M rows of a at once (read
// through L1; a is small); shuffle and shared-memory reductions; thread m
// writes row m of column n with the bias and, accumulating, out's old value
// added in f32 before the one rounding. Launched with PDL (pdl_launch.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/matmul_cuda.hpp"
#include "cuda/pdl_launch.cuh"

namespace strata::cuda {
namespace {

constexpr int kMaxRows = 8;
constexpr int kWarps = 4;

struct SkinnyParams {
  const void* a;
  const void* b;
  const void* bias;
  void* out;
  std::int64_t M, N, K;
  std::int64_t am, bn, om, on, bs;  // a's row stride, b's column stride, out's, bias's
  bool accumulate;
};

template <class T>
struct Lanes;  // VEC elements of T in one 16-byte load, widened to float
template <>
struct Lanes<float> {
  static constexpr int n = 4;
  __device__ static void load(const float* p, float* f) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    f[0] = v.x;
    f[1] = v.y;
    f[2] = v.z;
    f[3] = v.w;
  }
};
template <>
struct Lanes<__nv_bfloat16> {
  static constexpr int n = 8;
  __device__ static void load(const __nv_bfloat16* p, float* f) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = __bfloat1622float2(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
};
template <>
struct Lanes<__half> {
  static constexpr int n = 8;
  __device__ static void load(const __half* p, float* f) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    const auto* h = reinterpret_cast<const __half2*>(&v);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 t = __half22float2(h[i]);
      f[2 * i] = t.x;
      f[2 * i + 1] = t.y;
    }
  }
};

template <class T>
__device__ __forceinline__ float to_f(T x) {
  return static_cast<float>(x);
}
template <class T>
__device__ __forceinline__ T from_f(float x) {
  return static_cast<T>(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <>
__device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

// One block per output column n: its 4 warps split W's row n along K, each
// lane keeping kUnroll 16-byte loads in flight, then the warps' partial sums
// meet in shared memory. (A warp per column left too few loads in flight:
// K = 2048 in f32 was 16 dependent steps per warp with one block per SM.)
constexpr int kUnroll = 4;

template <class T, bool VEC>
__global__ void __launch_bounds__(kWarps * 32) skinny_kernel(const SkinnyParams p) {
  grid_dependency_wait();
  allow_dependents();
  constexpr int V = Lanes<T>::n;
  __shared__ float part[kWarps][kMaxRows];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const T* a = static_cast<const T*>(p.a);
  const T* b = static_cast<const T*>(p.b);
  const int M = static_cast<int>(p.M);
  for (std::int64_t n = blockIdx.x; n < p.N; n += gridDim.x) {
    const T* w = b + n * p.bn;
    float acc[kMaxRows];
#pragma unroll
    for (int m = 0; m < kMaxRows; ++m) acc[m] = 0.0f;
    if constexpr (VEC) {
      constexpr std::int64_t step = std::int64_t(kWarps) * 32 * V;
      for (std::int64_t k0 = (std::int64_t(warp) * 32 + lane) * V; k0 < p.K;
           k0 += step * kUnroll) {
        float wv[kUnroll][V];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const std::int64_t k = k0 + u * step;
          if (k < p.K) {
            Lanes<T>::load(w + k, wv[u]);
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) wv[u][j] = 0.0f;
          }
        }
#pragma unroll
        for (int m = 0; m < kMaxRows; ++m) {
          if (m < M) {
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
              const std::int64_t k = k0 + u * step;
              if (k < p.K) {
                float xv[V];
                Lanes<T>::load(a + m * p.am + k, xv);
#pragma unroll
                for (int j = 0; j < V; ++j) acc[m] = fmaf(xv[j], wv[u][j], acc[m]);
              }
            }
          }
        }
      }
    } else {
      for (std::int64_t k = threadIdx.x; k < p.K; k += kWarps * 32) {
        const float wv = to_f(w[k]);
#pragma unroll
        for (int m = 0; m < kMaxRows; ++m)
          if (m < M) acc[m] = fmaf(to_f(a[m * p.am + k]), wv, acc[m]);
      }
    }
#pragma unroll
    for (int m = 0; m < kMaxRows; ++m) {
#pragma unroll
      for (int sh = 16; sh > 0; sh >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], sh);
      if (lane == 0) part[warp][m] = acc[m];
    }
    __syncthreads();
    if (threadIdx.x < M) {
      const int m = threadIdx.x;
      float r = 0.0f;
#pragma unroll
      for (int i = 0; i < kWarps; ++i) r += part[i][m];
      if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bs]);
      T* o = static_cast<T*>(p.out) + m * p.om + n * p.on;
      if (p.accumulate) r += to_f(*o);
      *o = from_f<T>(r);
    }
    __syncthreads();  // part is reused by the next column
  }
}

bool disabled() {
  static const bool off = [] {
    const char* e = std::getenv("STRATA_CUDA_SKINNY");
    return e != nullptr && std::strcmp(e, "0") == 0;
  }();
  return off;
}

template <class T>
void run(const MatmulArgs& g) {
  SkinnyParams p{};
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
  const bool vec = p.K % V == 0 && p.am % V == 0 && p.bn % V == 0 &&
                   reinterpret_cast<std::uintptr_t>(p.a) % 16 == 0 &&
                   reinterpret_cast<std::uintptr_t>(p.b) % 16 == 0;
  int sms = 0, dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int grid = static_cast<int>(std::min<std::int64_t>(p.N, std::int64_t(sms) * 16));
  const cudaStream_t st = static_cast<cudaStream_t>(g.stream);
  if (vec)
    CUDA_CHECK(launch_pdl(skinny_kernel<T, true>, grid, kWarps * 32, 0, st, p));
  else
    CUDA_CHECK(launch_pdl(skinny_kernel<T, false>, grid, kWarps * 32, 0, st, p));
}

}  // namespace

std::string matmul_skinny_supports(const MatmulArgs& g) {
  if (disabled()) return "STRATA_CUDA_SKINNY=0";
  if (g.out.dtype == DType::f64) return "f64 goes to cuBLAS";
  if (g.batch_rank != 0) return "batched";
  if (g.M < 1 || g.M > kMaxRows) return "more than 8 rows";
  if (g.K < 1) return "K = 0";
  if (g.a.strides[1] != 1 || g.b.strides[0] != 1) return "a's rows or b's columns not unit-stride";
  return "";
}

void matmul_skinny(const MatmulArgs& g) {
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
