#pragma once
// The tiled path for 16-bit operands (included by engine.cuh; the default
// for them, ew_variant.cpp). ew_tiled_kernel moves 2-byte elements one per
// lane (64-byte warp loads, 8 bytes in flight per thread per input), which
// left bf16 a + b^T far below f32's rate (docs/log/ops.md, "16-bit rows and
// the transposed add"). Here a block of 256 threads walks 64 x 64 tiles
// with 4- and 16-byte accesses only:
//  * a transposed input (unit stride along the tile's rows) is read as
//    2 x 8 micro-blocks: lane l takes rows 2l, 2l+1 (one 4-byte load, 32
//    lanes = 128 contiguous bytes) of the 8 columns of its warp, regroups
//    them in registers (byte_perm) into two 16-byte row chunks and stores
//    those to a shared tile of 64 rows x 8 chunks; chunk q of row r sits at
//    q ^ ((r / 2) % 8), so the 8 lanes of each 16-byte store phase and of
//    each read phase hit 8 different chunk columns (no bank conflicts);
//  * the output and the other inputs move as 16-byte vectors along the
//    rows: 8 threads a row, 32 rows a pass, two passes.
// Taken when every operand is 2 bytes, the output and the straight inputs
// have unit inner stride, 16-byte aligned rows (outer strides multiples of
// 8), each transposed input has unit row stride, even column and outer
// strides and a 4-byte aligned start, and both tile dims are >= 64; a tile
// past the edge is done element by element.
#include <cstdint>
#include <cuda/std/tuple>
#include <utility>

#include "cuda/elementwise/ew_params.cuh"
#include "cuda/pdl_launch.cuh"
#include "strata/iter_args.hpp"

namespace strata::cuda {

inline constexpr int kT16 = 64;              // tile edge, elements
inline constexpr int kT16Threads = 256;      // 8 warps: one per 8 columns of a transposed input
inline constexpr int kT16Chunks = kT16 / 8;  // 16-byte chunks per tile row

__device__ __forceinline__ int t16_slot(int r, int q) {
  return r * kT16Chunks + (q ^ ((r >> 1) & 7));
}

template <class Op, class Out, class... Ins>
__global__ void __launch_bounds__(kT16Threads, 4)
    ew_tiled16_kernel(EwParams<1 + sizeof...(Ins), std::int64_t> p, unsigned tmask, Op op) {
  constexpr int N = 1 + sizeof...(Ins);
  using Seq = std::index_sequence_for<Ins...>;
  static_assert(sizeof(Out) == 2 && ((sizeof(Ins) == 2) && ...), "16-bit operands only");
  __shared__ uint4 tile[sizeof...(Ins)][kT16 * kT16Chunks];  // 8 KB per input
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const std::int64_t C = p.shape[0], R = p.shape[1];
  const std::int64_t tc = (C + kT16 - 1) / kT16, tr = (R + kT16 - 1) / kT16;
  const std::int64_t ntiles = p.numel / (R * C) * tr * tc;
  const int t = threadIdx.x, lane = t % 32, warp = t / 32;
  const int q = t % kT16Chunks;  // this thread's chunk of a row in the vector passes
  for (std::int64_t ti = blockIdx.x; ti < ntiles; ti += gridDim.x) {
    std::int64_t r0, c0, base[N];
    tile_origin(p, ti, tc, tr, kT16, r0, c0, base);
    if (r0 + kT16 > R || c0 + kT16 > C) {  // an edge tile (uniform over the block)
      for (int i = t; i < kT16 * kT16; i += kT16Threads) {
        const int rl = i / kT16, cl = i % kT16;
        if (r0 + rl >= R || c0 + cl >= C) continue;
        const Out r = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return op(ld<Ins>(p.ptr[K + 1],
                            base[K + 1] + rl * p.strides[K + 1][1] + cl * p.strides[K + 1][0])...);
        }
        (Seq{});
        reinterpret_cast<Out*>(p.ptr[0])[base[0] + rl * p.strides[0][1] + cl * p.strides[0][0]] = r;
      }
      continue;
    }
    // Every load first: straight inputs' two row vectors into registers, the
    // transposed inputs' micro-blocks through registers into their tiles.
    ::cuda::std::tuple<Vec<Ins, 8>...> v[2];
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using T = typename ::cuda::std::tuple_element<K, ::cuda::std::tuple<Ins...>>::type;
            const T* src = reinterpret_cast<const T*>(p.ptr[K + 1]) + base[K + 1];
            if (tmask >> (K + 1) & 1) {
              const std::int64_t sc = p.strides[K + 1][0];
              unsigned w[8];  // rows 2 lane, 2 lane + 1 of column 8 warp + k
#pragma unroll
              for (int k = 0; k < 8; ++k)
                w[k] = *reinterpret_cast<const unsigned*>(src + 2 * lane + (8 * warp + k) * sc);
              uint4 lo, hi;  // rows 2 lane and 2 lane + 1, columns 8 warp .. 8 warp + 7
              unsigned* l = &lo.x;
              unsigned* h = &hi.x;
#pragma unroll
              for (int k = 0; k < 4; ++k) {
                l[k] = __byte_perm(w[2 * k], w[2 * k + 1], 0x5410);
                h[k] = __byte_perm(w[2 * k], w[2 * k + 1], 0x7632);
              }
              tile[K][t16_slot(2 * lane, warp)] = lo;
              tile[K][t16_slot(2 * lane + 1, warp)] = hi;
            } else {
#pragma unroll
              for (int pass = 0; pass < 2; ++pass)
                ::cuda::std::get<K>(v[pass]) =
                    ld_vec<T, 8>(src + (t / kT16Chunks + 32 * pass) * p.strides[K + 1][1] + 8 * q);
            }
          }(),
          ...);
    }
    (Seq{});
    __syncthreads();
#pragma unroll
    for (int pass = 0; pass < 2; ++pass) {
      const int rl = t / kT16Chunks + 32 * pass;
      [&]<std::size_t... K>(std::index_sequence<K...>) {
        ((tmask >> (K + 1) & 1
              ? (::cuda::std::get<K>(v[pass]) =
                     reinterpret_cast<const Vec<Ins, 8>&>(tile[K][t16_slot(rl, q)]),
                 0)
              : 0),
         ...);
      }
      (Seq{});
      st_vec<Out, 8>(reinterpret_cast<Out*>(p.ptr[0]) + base[0] + rl * p.strides[0][1] + 8 * q,
                     apply_vec<8, Out>(op, v[pass], Seq{}));
    }
    __syncthreads();  // the tiles are refilled by the next iteration
  }
}

// Whether ew_tiled16_kernel can take an iteration of n 16-bit operands
// whose tiled inputs are tm (tiled_mask's, nonzero).
inline bool tiled16_fits(const IterArgs& a, int n, unsigned tm) {
  const int in = a.ndim - 1, mid = a.ndim - 2;
  if (a.shape[in] < kT16 || a.shape[mid] < kT16) return false;
  for (int k = 0; k < n; ++k) {
    const bool trans = tm >> k & 1;
    const int unit = trans ? mid : in;         // the dim of stride 1
    const std::int64_t align = trans ? 2 : 8;  // elements: 4 or 16 bytes
    if (a.op[k].strides[unit] != 1) return false;
    if (reinterpret_cast<std::uintptr_t>(a.op[k].data) % (2 * align) != 0) return false;
    for (int d = 0; d < a.ndim; ++d)
      if (d != unit && a.op[k].strides[d] % align != 0) return false;
  }
  return true;
}

}  // namespace strata::cuda
