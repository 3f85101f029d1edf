#pragma once
// bf16/f16 matrix-vector products of 9-16 rows on the tensor cores:
// out [M, N] (+)= x [M, K] W^T (+ bias), W [N, K] as stored, 9 <= M <= 16.
// The default for such calls with 16-byte aligned rows and K % 8 == 0
// (matmul_gemv.cu routes; STRATA_GEMV16_MMA=0 sends them to gemv16_kernel).
//
// Why: gemv16_kernel multiplies every 16-byte piece of W into all 16 rows
// of x, each re-read from L1, with FFMA: 16 bytes of x and 256 FMAs per
// 16 bytes of W in bf16 (twice f32's FMAs per byte), so L1 and the FMA
// pipe, not W's bytes from HBM, set its time (docs/log/ops.md, "linear
// with 9-16 rows, measured"). Here
// a warp owns 16 columns of out: the 16 rows of W are the A operand of
// mma.sync m16n8k16 (row-major [16, K], as W is stored), x^T is B as two
// n8 tiles (x row-major [M, K] is B column-major, what .col wants), the
// sums stay in f32. Per 32 k a warp reads 1 KB of W and 1 KB of x (one
// byte of x per byte of W, not 16) and issues four mma: ~8 tensor-core
// FMAs per byte of W, far below the tensor cores' rate, so HBM sets the
// time as it should (the LM head's W is 77 MB).
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating
// point type"; lane = 4 g + t): A's four b32 registers hold (row g, cols
// 2t..2t+1), (row g+8, cols 2t..2t+1), (row g, cols 2t+8..2t+9), (row g+8,
// cols 2t+8..2t+9); B's two hold (rows 2t..2t+1, col g), (rows 2t+8..2t+9,
// col g); C's four floats are (row g, cols 2t, 2t+1), (row g+8, cols 2t,
// 2t+1). A sum over k may take k in any order as long as A and B agree,
// and both map logical k of a lane's t the same way, so each 32-k chunk is
// relabelled: lane t's 16-byte piece [8t, 8t+8) of a row is its registers
// for two k-steps (elements 0-3 step one, 4-7 step two). Then A (W rows g
// and g+8) and B (x rows g and g+8: n-tile 0 and 1) are each one plain
// 16-byte load per row and chunk, no shared memory, no ldmatrix: W is read
// once, so staging it through shared memory (cp.async + ldmatrix) would add
// a copy and a barrier and save nothing; direct loads keep kUnroll chunks
// (4 KB of W per warp) in flight with no pipeline bookkeeping. W's loads
// skip L1 (L1::no_allocate) so x, re-read by every warp, stays there.
//
// Filling the GPU: N / 16 tiles are few at the decode shapes (N = 768: 48),
// so a block splits each tile's K over `split` warps (a power of two, up
// to 16) and adds their f32 C tiles through shared memory in warp order
// (deterministic); split doubles while tiles x split < 8 warps per SM and
// each warp keeps >= 2 chunks. K 768 -> N 768: 48 blocks of 8 warps, 3
// chunks each; 3072 -> 768: 48 x 16 warps, 6 chunks; 768 -> 2304: 144 x 8;
// 768 -> 3072: 192 x 8; 768 -> 50257 (the LM head): 3142 tiles, split 1,
// four tiles per block, 786 blocks of 4 warps, 24 chunks each. Splitting
// K across blocks (thread block clusters) would spread N = 768 over more
// than 48 SMs; not done until a run shows those shapes short of HBM.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/matmul/gemv_common.cuh"
#include "cuda/mma_sync.cuh"
#include "cuda/pdl_launch.cuh"

namespace strata::cuda::gemv16mma {

constexpr int kChunk = 32;     // k per chunk: two m16n8k16 k-steps
constexpr int kUnroll = 4;     // chunks of W in flight per warp
constexpr int kMaxWarps = 16;  // per block, and the most K slices per tile
constexpr int kWarpsPerSm = 8;

// 16 bytes of W, not kept in L1. volatile keeps it after
// grid_dependency_wait() (also asm volatile) in program order.
__device__ __forceinline__ uint4 load_stream(const void* q) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(q));
  return v;
}

// This warp's f32 C tiles for out columns [16 tile, 16 tile + 16) over its
// K slice s of `split` (whole chunks [chunks s / split, chunks (s+1) /
// split)). c[j] is n-tile j (x rows 8j..8j+7). W rows past N and x rows
// past M read as zero (never loaded); K % 8 == 0, so a lane's 16-byte
// piece lies wholly inside K or wholly past it.
template <class T, class P>
__device__ __forceinline__ void tile_sums(const P& p, std::int64_t tile, int s, int split, int g,
                                          int t, float (&c)[2][4]) {
  const T* w = static_cast<const T*>(p.b);
  const T* x = static_cast<const T*>(p.a);
  const std::int64_t n_lo = tile * 16 + g, n_hi = n_lo + 8;
  const bool w_lo = n_lo < p.N, w_hi = n_hi < p.N, x_lo = g < p.M, x_hi = g + 8 < p.M;
  const T* wl = w + (w_lo ? n_lo : 0) * p.b_col_stride + 8 * t;
  const T* wh = w + (w_hi ? n_hi : 0) * p.b_col_stride + 8 * t;
  const T* xl = x + (x_lo ? g : 0) * p.a_row_stride + 8 * t;
  const T* xh = x + (x_hi ? g + 8 : 0) * p.a_row_stride + 8 * t;
  const std::int64_t chunks = (p.K + kChunk - 1) / kChunk;
  const std::int64_t lo = chunks * s / split, hi = chunks * (s + 1) / split;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (std::int64_t c0 = lo; c0 < hi; c0 += kUnroll) {
    uint4 wa[kUnroll], wb[kUnroll], xa[kUnroll], xb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t k = (c0 + u) * kChunk;
      const bool in = c0 + u < hi && k + 8 * t < p.K;
      wa[u] = in && w_lo ? load_stream(wl + k) : zero;
      wb[u] = in && w_hi ? load_stream(wh + k) : zero;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const std::int64_t k = (c0 + u) * kChunk;
      const bool in = c0 + u < hi && k + 8 * t < p.K;
      xa[u] = in && x_lo ? __ldg(reinterpret_cast<const uint4*>(xl + k)) : zero;
      xb[u] = in && x_hi ? __ldg(reinterpret_cast<const uint4*>(xh + k)) : zero;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      // k-step one: piece elements 0-1 (logical cols 2t..) and 2-3 (2t+8..).
      MmaSync<T>::run(c[0], wa[u].x, wb[u].x, wa[u].y, wb[u].y, xa[u].x, xa[u].y);
      MmaSync<T>::run(c[1], wa[u].x, wb[u].x, wa[u].y, wb[u].y, xb[u].x, xb[u].y);
      // k-step two: elements 4-5 and 6-7.
      MmaSync<T>::run(c[0], wa[u].z, wb[u].z, wa[u].w, wb[u].w, xa[u].z, xa[u].w);
      MmaSync<T>::run(c[1], wa[u].z, wb[u].z, wa[u].w, wb[u].w, xb[u].z, xb[u].w);
    }
  }
}

// Blocks of `split` x (blockDim / 32 / split) warps: warp w works on tile
// slot w / split of the block, K slice w % split. Slice 0 adds the others'
// partial tiles (dynamic shared memory, 1 KB per warp, when split > 1)
// and writes out. The tile loop is uniform over the block (barriers).
template <class T, class P>
__global__ void __launch_bounds__(kMaxWarps * 32) gemv16_mma_kernel(const P p, const int split) {
  extern __shared__ float red[];  // [warp][8][32]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int s = warp % split, slot = warp / split;
  const int per_block = static_cast<int>(blockDim.x / 32) / split;  // tiles
  const int g = lane / 4, t = lane % 4;
  const std::int64_t tiles = (p.N + 15) / 16;
  {  // W is read-only here: warm L2 with this slot's first tile's 16 rows.
    const std::int64_t tile = std::int64_t(blockIdx.x) * per_block + slot;
    const std::int64_t lines = (p.K * std::int64_t(sizeof(T)) + 127) / 128;  // per row
    const char* w = static_cast<const char*>(p.b);
    if (tile < tiles)
      for (std::int64_t l = std::int64_t(s) * 32 + lane; l < 16 * lines; l += split * 32) {
        const std::int64_t n = tile * 16 + l / lines;
        if (n < p.N)
          gemv::prefetch_l2(w + (n * p.b_col_stride * std::int64_t(sizeof(T)) + (l % lines) * 128));
      }
  }
  grid_dependency_wait();
  allow_dependents();
  const std::int64_t stride = std::int64_t(gridDim.x) * per_block;
  for (std::int64_t base = std::int64_t(blockIdx.x) * per_block; base < tiles; base += stride) {
    const std::int64_t tile = base + slot;
    float c[2][4] = {};
    if (tile < tiles) tile_sums<T>(p, tile, s, split, g, t, c);
    if (split > 1) {
      __syncthreads();  // the previous tile's partials are read
      if (s > 0)
#pragma unroll
        for (int e = 0; e < 8; ++e) red[(warp * 8 + e) * 32 + lane] = c[e / 4][e % 4];
      __syncthreads();
      if (s == 0)
        for (int o = 1; o < split; ++o)
#pragma unroll
          for (int e = 0; e < 8; ++e) c[e / 4][e % 4] += red[((warp + o) * 8 + e) * 32 + lane];
    }
    if (s != 0 || tile >= tiles) continue;
      // C element e of n-tile j: out row 8j + 2t + (e & 1), column 16 tile +
      // g + 8 (e >> 1).
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const std::int64_t m = 8 * j + 2 * t + (e & 1), n = tile * 16 + g + 8 * (e >> 1);
        if (m >= p.M || n >= p.N) continue;
        float r = c[j][e];
        if (p.bias != nullptr) r += gemv::to_f(static_cast<const T*>(p.bias)[n * p.bias_stride]);
        T* o = static_cast<T*>(p.out) + m * p.out_row_stride + n * p.out_col_stride;
        if (p.accumulate) r += gemv::to_f(*o);
        *o = gemv::from_f<T>(r);
      }
  }
}

// out [M, N] (+)= x [M, K] W^T (+ bias) for T bf16/f16, 9 <= M <= 16; p as
// matmul_gemv.cu's GemvParams (a = x with row stride a_row_stride, b = W
// with row stride b_col_stride, both 16-byte aligned with both strides
// multiples of 8 and K % 8 == 0: the caller checks).
template <class T, class P>
void launch(const P& p, cudaStream_t st) {
  const std::int64_t tiles = (p.N + 15) / 16, chunks = (p.K + kChunk - 1) / kChunk;
  const std::int64_t target = std::int64_t(sm_count()) * kWarpsPerSm;
  int split = 1;
  while (split < kMaxWarps && tiles * split < target && chunks >= 4 * split) split *= 2;
  const int per_block = std::max(1, 4 / split);  // blocks of at least four warps
  const std::int64_t blocks = std::min<std::int64_t>((tiles + per_block - 1) / per_block, 1 << 20);
  const int threads = split * per_block * 32;
  const std::size_t smem = split > 1 ? std::size_t(threads) * 8 * sizeof(float) : 0;
  CUDA_CHECK(launch_kernel(gemv16_mma_kernel<T, P>, dim3(static_cast<unsigned>(blocks)),
                           dim3(static_cast<unsigned>(threads)), smem, st, p, split));
}

}  // namespace strata::cuda::gemv16mma
