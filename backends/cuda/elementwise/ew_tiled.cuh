#pragma once
// The cuda elementwise engine's tiled path (included by engine.cuh). Taken
// when some
// input is transposed against the output: its stride along the iteration's
// second-innermost dim is +-1 while its innermost stride is not 0 or +-1
// (a + b^T). The strided kernel reads such an operand with lanes a whole
// row apart, so every sector is fetched for one element; here each block
// walks 32 x 32 tiles of the last two dims: a transposed input is read with
// lanes along ITS unit-stride dim into a shared tile (coalesced), the other
// inputs and the output with lanes along the innermost dim, as before.
// Batch dims (the outer ones) and any strides (0 and negative included) are
// decoded per tile in 64 bits. It reads f32 a + b^T well above the strided
// kernel's rate (docs/log/ops.md, "Elementwise and row ops on cuda").
#include <cuda/std/tuple>
#include <utility>

#include "cuda/elementwise/ew_params.cuh"
#include "cuda/pdl_launch.cuh"
#include "strata/iter_args.hpp"

namespace strata::cuda {

inline constexpr int kTile = 32;     // tile edge
inline constexpr int kTileRows = 8;  // thread rows: 32 x 8 threads, 4 elements each
inline constexpr int kTilePad =
    kTile + 1;  // shared rows of 33: no bank conflicts on the transposed read

// Byte offset of input K's tile in the block's shared memory (tiles of every
// input, in order, each 8-byte aligned).
template <class... Ins>
struct TileLayout {
  static constexpr std::size_t kSizes[sizeof...(Ins)] = {sizeof(Ins)...};
  static constexpr std::size_t offset(std::size_t k) {
    std::size_t o = 0;
    for (std::size_t i = 0; i < k; ++i) o += (kTile * kTilePad * kSizes[i] + 7) / 8 * 8;
    return o;
  }
  static constexpr std::size_t kBytes = offset(sizeof...(Ins));
};

// Resident blocks asked of ptxas: 6 (40 registers; 1536 threads per SM keep
// more loads in flight) for unary and binary ops on operands of up to 4
// bytes, else 4 (up to 64 registers): an 8-byte operand or where's third
// input spill at 40.
template <class... Ts>
inline constexpr int kTiledMinBlocks = sizeof...(Ts) <= 3 && ((sizeof(Ts) <= 4) && ...) ? 6 : 4;

// Tile t's first row and column (of edge x edge tiles; tc, tr tiles along
// the last two dims) and every operand's element offset there, the batch
// index decoded over the outer dims (64-bit, any strides).
template <int N>
__device__ __forceinline__ void tile_origin(const EwParams<N, std::int64_t>& p, std::int64_t t,
                                            std::int64_t tc, std::int64_t tr, int edge,
                                            std::int64_t& r0, std::int64_t& c0,
                                            std::int64_t (&base)[N]) {
  std::int64_t q = t;
  c0 = q % tc * edge;
  q /= tc;
  r0 = q % tr * edge;
  q /= tr;
#pragma unroll
  for (int k = 0; k < N; ++k) base[k] = r0 * p.strides[k][1] + c0 * p.strides[k][0];
  for (int j = 2; j < p.ndim; ++j) {
    const std::int64_t d = q % p.shape[j];
    q /= p.shape[j];
#pragma unroll
    for (int k = 0; k < N; ++k) base[k] += d * p.strides[k][j];
  }
}

// tmask: bit k set when operand k (an input) is read through its tile.
template <class Op, class Out, class... Ins>
__global__ void __launch_bounds__(kTile* kTileRows, kTiledMinBlocks<Out, Ins...>)
    ew_tiled_kernel(EwParams<1 + sizeof...(Ins), std::int64_t> p, unsigned tmask, Op op) {
  constexpr int N = 1 + sizeof...(Ins);
  constexpr int PER = kTile / kTileRows;
  using L = TileLayout<Ins...>;
  using Seq = std::index_sequence_for<Ins...>;
  __shared__ alignas(16) unsigned char smem[L::kBytes];
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const std::int64_t C = p.shape[0], R = p.shape[1];
  const std::int64_t tc = (C + kTile - 1) / kTile, tr = (R + kTile - 1) / kTile;
  const std::int64_t ntiles = p.numel / (R * C) * tr * tc;
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (std::int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
    std::int64_t r0, c0, base[N];
    tile_origin(p, t, tc, tr, kTile, r0, c0, base);
    // Every load of the tile first: transposed inputs into shared memory
    // (lane tx along the tile's rows r0 + tx, their unit-stride dim), the
    // others into registers at (r0 + ty + 8i, c0 + tx).
    ::cuda::std::tuple<Ins...> v[PER];
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (
          [&] {
            using T = typename ::cuda::std::tuple_element<K, ::cuda::std::tuple<Ins...>>::type;
            const char* src = p.ptr[K + 1];
            const std::int64_t sr = p.strides[K + 1][1], sc = p.strides[K + 1][0];
            if (tmask >> (K + 1) & 1) {
              T* tile = reinterpret_cast<T*>(smem + L::offset(K));
#pragma unroll
              for (int i = 0; i < PER; ++i) {
                const int cl = ty + i * kTileRows;
                if (r0 + tx < R && c0 + cl < C)
                  tile[cl * kTilePad + tx] = ld<T>(src, base[K + 1] + tx * sr + cl * sc);
              }
            } else {
#pragma unroll
              for (int i = 0; i < PER; ++i) {
                const int rl = ty + i * kTileRows;
                if (r0 + rl < R && c0 + tx < C)
                  ::cuda::std::get<K>(v[i]) = ld<T>(src, base[K + 1] + rl * sr + tx * sc);
              }
            }
          }(),
          ...);
    }
    (Seq{});
    __syncthreads();
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int rl = ty + i * kTileRows;
      if (r0 + rl < R && c0 + tx < C) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
          ((tmask >> (K + 1) & 1 ? (::cuda::std::get<K>(v[i]) = reinterpret_cast<const Ins*>(
                                        smem + L::offset(K))[tx * kTilePad + rl],
                                    0)
                                 : 0),
           ...);
        }
        (Seq{});
        const Out r = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return op(::cuda::std::get<K>(v[i])...);
        }
        (Seq{});
        reinterpret_cast<Out*>(p.ptr[0])[base[0] + rl * p.strides[0][1] + tx * p.strides[0][0]] = r;
      }
    }
    __syncthreads();  // the tiles are refilled by the next iteration
  }
}

// The inputs' tiled mask for the iteration, 0 when the tiled path does not
// apply (or is turned off).
inline unsigned tiled_mask(const IterArgs& a, int n) {
  if (a.ndim < 2) return 0;
  const int in = a.ndim - 1, mid = a.ndim - 2;
  // Tiles at least half full along both dims; narrower shapes read well
  // enough through the strided kernel (a few rows per warp).
  if (a.shape[in] < kTile / 2 || a.shape[mid] < kTile / 2) return 0;
  unsigned m = 0;
  for (int k = 1; k < n; ++k) {
    const std::int64_t si = a.op[k].strides[in], sm = a.op[k].strides[mid];
    if ((sm == 1 || sm == -1) && si != 0 && si != 1 && si != -1) m |= 1u << k;
  }
  return m;
}

}  // namespace strata::cuda
