#pragma once
// The FFMA kernel for 9-16 rows (gemv16_kernel): f32 calls with a small W,
// and 16-bit calls the tensor-core kernel (gemv16_mma.cuh) cannot take;
// matmul_gemv.cu routes. Included by matmul_gemv.cu only.
//
// Why a second kernel and why two columns per warp: each 16-byte
// load of W feeds M 16-byte loads of a (L1 hits: 16 rows of K = 512 are
// 16-32 KB), so at 16 rows a's loads are 16 of every 17 and L1 bandwidth,
// not W's bytes from HBM, sets the time. At 16 x 512 x 1408 f32, one column
// per warp moves 1408 x 16 x 512 x 4 B = 46 MB of a through L1 (~12 columns
// on the busiest SM x 68 loads x 4 wavefronts ~ 3300 clocks at 128 B/clock),
// more than twice the time W's 2.9 MB take from HBM. Two columns per warp
// share every load of a: ~1700 clocks, near W's floor; bf16 halves both.
// Splitting the rows over two warps or blocks instead reads W twice and a
// just as often. Each lane keeps 2 x 16 f32 sums (32 registers) and up to
// 2 x kUnroll16 loads of W in flight; a warp folds its 32 sums with a halving
// reduce-scatter (fold32: 31 shuffles, lane l ends with sum l) where a
// butterfly of each sum would take 160. Blocks of two warps (4 columns, as
// gemv_kernel's blocks of four) spread N = 1408 over 352 blocks.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/matmul/gemv_params.cuh"
#include "cuda/pdl_launch.cuh"

namespace strata::cuda {
namespace {

constexpr int kMaxRows16 = 16;  // rows of gemv16_kernel
constexpr int kWarps16 = 2;
// Loads of W in flight per lane and column: 2 x 4, as many per lane as
// gemv_kernel's kUnroll (2 x 8: ptxas held f32 to 128 registers and spilled).
constexpr int kUnroll16 = 4;

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
// is only read after grid_dependency_wait(), as gemv_multirow reads b.
// acc[c * 16 + m] is column c, row m, so after fold32 lane l holds column
// l / 16, row l % 16.
template <class T, bool VEC>
__device__ __forceinline__ void column_pair(const GemvParams& p, std::int64_t n0, int lane) {
  using L = Lanes<T>;
  constexpr int V = L::n, R = kMaxRows16;
  const T* a = static_cast<const T*>(p.a);
  const std::int64_t n1 = n0 + 1 < p.N ? n0 + 1 : n0;
  const T* w0 = static_cast<const T*>(p.b) + n0 * p.b_col_stride;
  const T* w1 = static_cast<const T*>(p.b) + n1 * p.b_col_stride;
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
              L::widen(__ldg(reinterpret_cast<const typename L::Raw*>(a + m * p.a_row_stride) + c),
                       xf);
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
          const float x = to_f(a[m * p.a_row_stride + k]);
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
    if (p.bias != nullptr) r += to_f(static_cast<const T*>(p.bias)[n * p.bias_stride]);
    T* o = static_cast<T*>(p.out) + m * p.out_row_stride + n * p.out_col_stride;
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
    const char* row = static_cast<const char*>(p.b) + n * p.b_col_stride * std::int64_t(sizeof(T));
    for (std::int64_t off = std::int64_t(lane) * 128; off < bytes; off += 32 * 128)
      prefetch_l2(row + off);
  }
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t n = first; n < p.N; n += stride) column_pair<T, VEC>(p, n, lane);
}

// Launches gemv16_kernel for p (vec: 16-byte loads of a and W).
template <class T>
void launch_gemv16_ffma(const GemvParams& p, bool vec, cudaStream_t st) {
  constexpr std::int64_t cols = 2 * kWarps16;  // per block
  const std::int64_t blocks = std::min<std::int64_t>((p.N + cols - 1) / cols, 1 << 16);
  const dim3 grid(static_cast<unsigned>(blocks)), block(kWarps16 * 32);
  if (vec)
    CUDA_CHECK(launch_kernel(gemv16_kernel<T, true>, grid, block, 0, st, p));
  else
    CUDA_CHECK(launch_kernel(gemv16_kernel<T, false>, grid, block, 0, st, p));
}

}  // namespace
}  // namespace strata::cuda
