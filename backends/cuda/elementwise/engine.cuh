#pragma once
// The cuda elementwise engine: one kernel family for an IterArgs over N
// operands (op[0] the output) of any stored types, with a device functor
// `Op` (Out operator()(Ins...) on the CUDA stored types).
//
//  * ew_vec_kernel: every operand walks its innermost dim with stride 1 or 0.
//    Each thread moves VEC elements per operand with 16-byte (or narrower)
//    vector loads/stores; stride-0 operands are read once per vector (once
//    per thread for a flat op). The flat case (ndim == 1) indexes in 64 bits
//    and handles the tail of numel % VEC elements; the multi-dim case (a
//    broadcast row, a batch of contiguous rows) needs the row length to be a
//    multiple of VEC and decodes the vector's outer coordinates with 32-bit
//    fast division.
//  * ew_tiled_kernel (ew_tiled.cuh): an input transposed against the
//    output, through 32 x 32 shared-memory tiles; 16-bit operands through
//    64 x 64 tiles of 4- and 16-byte accesses (ew_tiled16_kernel,
//    ew_tiled16.cuh).
//  * ew_strided_kernel<I>: anything else, one element per thread per step
//    (UNROLL steps in flight), offsets decoded from the linear index with
//    fast 32-bit division (I = int32) or plain 64-bit division (I = int64,
//    when numel or an operand's offset range passes 2^31 - 1).
//
// Launches are grid-stride with at most one full wave of blocks (8 blocks
// of 256 threads per SM), but for the flat vector path, whose grid visits
// every vector once (grid_flat). launch_elementwise is the only code that launches
// them, through launch_kernel (launch_mode.cuh): by default with programmatic
// dependent launch (pdl_launch.cuh), so a small op's kernel is scheduled while
// the previous kernel drains; STRATA_CUDA_LAUNCH picks a cheaper launch.
//
// The building blocks (types, offsets, vectors) are ew_params.cuh's; the
// functors that apply a maths op to stored types are ew_types.cuh's.
#include <cuda_runtime.h>

#include <cstdint>
#include <cuda/std/tuple>
#include <utility>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/elementwise/elementwise_cuda.hpp"
#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_tiled.cuh"
#include "cuda/elementwise/ew_tiled16.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/launch_mode.cuh"
#include "cuda/pdl_launch.cuh"
#include "strata/iter_args.hpp"

namespace strata::cuda {

// bcast: bit k set when operand k (an input) has stride 0 along the inner dim.
template <int VEC, class Op, class Out, class... Ins>
__global__ void __launch_bounds__(kThreads)
    ew_vec_kernel(EwParams<1 + sizeof...(Ins), std::int32_t> p, unsigned bcast, Op op) {
  constexpr int N = 1 + sizeof...(Ins);
  using Seq = std::index_sequence_for<Ins...>;
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const std::int64_t nvec = p.numel / VEC;
  const std::int64_t step = std::int64_t(gridDim.x) * kThreads * kVecUnroll;
  if (p.ndim == 1) {
    // Flat: 64-bit element offsets; stride-0 inputs are loaded once.
    ::cuda::std::tuple<Ins...> fixed{};
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      ((bcast >> (K + 1) & 1 ? (::cuda::std::get<K>(fixed) = ld<Ins>(p.ptr[K + 1], 0), 0) : 0),
       ...);
    }
    (Seq{});
    for (std::int64_t v0 = std::int64_t(blockIdx.x) * kThreads * kVecUnroll + threadIdx.x;
         v0 < nvec; v0 += step) {
      Vec<Out, VEC> res[kVecUnroll];
#pragma unroll
      for (int u = 0; u < kVecUnroll; ++u) {
        const std::int64_t v = v0 + std::int64_t(u) * kThreads;
        if (v < nvec) {
          const std::int64_t e = v * VEC;
          const ::cuda::std::tuple<Vec<Ins, VEC>...> in = [&]<std::size_t... K>(
              std::index_sequence<K...>) {
            return ::cuda::std::tuple<Vec<Ins, VEC>...>{
                (bcast >> (K + 1) & 1
                     ? splat<VEC, Ins>(::cuda::std::get<K>(fixed))
                     : ld_vec<Ins, VEC>(reinterpret_cast<const Ins*>(p.ptr[K + 1]) + e))...};
          }
          (Seq{});
          res[u] = apply_vec<VEC, Out>(op, in, Seq{});
        }
      }
#pragma unroll
      for (int u = 0; u < kVecUnroll; ++u) {
        const std::int64_t v = v0 + std::int64_t(u) * kThreads;
        if (v < nvec) st_vec<Out, VEC>(reinterpret_cast<Out*>(p.ptr[0]) + v * VEC, res[u]);
      }
    }
    // The tail: numel % VEC elements, one per thread of the first block.
    if (blockIdx.x == 0 && threadIdx.x < p.numel - nvec * VEC) {
      const std::int64_t e = nvec * VEC + threadIdx.x;
      if constexpr (sizeof...(Ins) == 0) {
        reinterpret_cast<Out*>(p.ptr[0])[e] = op();
      } else {
        const Out r = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return op(
              (bcast >> (K + 1) & 1 ? ::cuda::std::get<K>(fixed) : ld<Ins>(p.ptr[K + 1], e))...);
        }
        (Seq{});
        reinterpret_cast<Out*>(p.ptr[0])[e] = r;
      }
    }
    return;
  }
  // Rows of a multiple of VEC elements: decode each vector's offsets (32-bit).
  for (std::int64_t v0 = std::int64_t(blockIdx.x) * kThreads * kVecUnroll + threadIdx.x; v0 < nvec;
       v0 += step) {
    Vec<Out, VEC> res[kVecUnroll];
    std::int32_t off[kVecUnroll][N];
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      const std::int64_t v = v0 + std::int64_t(u) * kThreads;
      if (v < nvec) {
        decode(p, static_cast<std::int32_t>(v * VEC), off[u]);
        const ::cuda::std::tuple<Vec<Ins, VEC>...> in = [&]<std::size_t... K>(
            std::index_sequence<K...>) {
          return ::cuda::std::tuple<Vec<Ins, VEC>...>{
              load_operand<VEC, Ins>(p.ptr[K + 1], off[u][K + 1], bcast >> (K + 1) & 1)...};
        }
        (Seq{});
        res[u] = apply_vec<VEC, Out>(op, in, Seq{});
      }
    }
#pragma unroll
    for (int u = 0; u < kVecUnroll; ++u) {
      const std::int64_t v = v0 + std::int64_t(u) * kThreads;
      if (v < nvec) st_vec<Out, VEC>(reinterpret_cast<Out*>(p.ptr[0]) + off[u][0], res[u]);
    }
  }
}

template <class I, class Op, class Out, class... Ins>
__global__ void __launch_bounds__(kThreads)
    ew_strided_kernel(EwParams<1 + sizeof...(Ins), I> p, Op op) {
  constexpr int N = 1 + sizeof...(Ins);
  using Seq = std::index_sequence_for<Ins...>;
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const I numel = static_cast<I>(p.numel);
  const I step = I(gridDim.x) * kThreads * kStridedUnroll;
  for (I i0 = I(blockIdx.x) * kThreads * kStridedUnroll + I(threadIdx.x); i0 < numel; i0 += step) {
    Out res[kStridedUnroll];
    I off[kStridedUnroll][N];
#pragma unroll
    for (int u = 0; u < kStridedUnroll; ++u) {
      const I i = i0 + I(u) * kThreads;
      if (i < numel) {
        decode(p, i, off[u]);
        res[u] = [&]<std::size_t... K>(std::index_sequence<K...>) {
          return op(ld<Ins>(p.ptr[K + 1], off[u][K + 1])...);
        }
        (Seq{});
      }
    }
#pragma unroll
    for (int u = 0; u < kStridedUnroll; ++u) {
      const I i = i0 + I(u) * kThreads;
      if (i < numel) reinterpret_cast<Out*>(p.ptr[0])[off[u][0]] = res[u];
    }
  }
}

// ---- launcher -------------------------------------------------------------------------

inline int grid_for(std::int64_t work_items, int per_block) {
  const std::int64_t want = (work_items + per_block - 1) / per_block;
  const std::int64_t wave = std::int64_t(sm_count()) * (2048 / kThreads);
  return static_cast<int>(want < wave ? (want < 1 ? 1 : want) : wave);
}

// Blocks for the flat vector path (ndim == 1). From 2^20 vectors on, enough
// to visit every vector once, as PyTorch's elementwise grid: contiguous add
// and cast of 16M-256M elements ran faster this way than with one striding
// wave. Below, the one wave, which ran 1M f32 elements faster
// (docs/log/ops.md, "Elementwise and row ops on cuda"; the threshold lies
// between the two measured sizes).
inline int grid_flat(std::int64_t nvec) {
  const std::int64_t per = kThreads * kVecUnroll;
  if (nvec < (std::int64_t(1) << 20)) return grid_for(nvec > 0 ? nvec : 1, per);
  const std::int64_t want = (nvec + per - 1) / per;
  return static_cast<int>(want < 0x7fffffff ? want : 0x7fffffff);
}

template <int N, class I>
EwParams<N, I> make_params(const IterArgs& a) {
  EwParams<N, I> p{};
  p.ndim = a.ndim;
  p.numel = a.numel();
  for (int j = 0; j < a.ndim; ++j) {
    const int d = a.ndim - 1 - j;
    p.shape[j] = static_cast<I>(a.shape[d]);
    if (sizeof(I) == 4 && a.shape[d] <= 0x7fffffff)
      p.shape_div[j] = FastDiv(static_cast<std::uint32_t>(a.shape[d]));
    for (int k = 0; k < N; ++k) p.strides[k][j] = static_cast<I>(a.op[k].strides[d]);
  }
  for (int k = 0; k < N; ++k) p.ptr[k] = static_cast<char*>(a.op[k].data);
  return p;
}

// True when every operand's element offsets and numel fit in int32.
// numel keeps 2^24 of headroom: the strided kernel's grid-stride index may
// step up to one grid (< 2^21 elements) past numel before its loop ends.
inline bool fits_int32(const IterArgs& a, int n) {
  constexpr std::int64_t lim = 0x7fffffff;
  if (a.numel() > lim - (std::int64_t(1) << 24)) return false;
  for (int k = 0; k < n; ++k) {
    std::int64_t lo = 0, hi = 0;
    for (int d = 0; d < a.ndim; ++d) {
      const std::int64_t e = (a.shape[d] - 1) * a.op[k].strides[d];
      (e < 0 ? lo : hi) += e;
    }
    if (hi > lim || -lo > lim) return false;
  }
  return true;
}

// out = op(ins...) over the iteration; a.op[0..N-1] are the operands.
template <class Out, class... Ins, class Op>
void launch_elementwise(const IterArgs& a, const Op& op) {
  constexpr int N = 1 + sizeof...(Ins);
  check(a.nops >= N, "cuda.elementwise", "expects ", N, " operands, got ", a.nops);
  const std::int64_t numel = a.numel();
  if (numel == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  constexpr int VEC = 16 / min_size_v<Out, Ins...>;
  constexpr std::size_t kSizes[N] = {sizeof(Out), sizeof(Ins)...};
  const int in = a.ndim - 1;
  const bool small = fits_int32(a, N);

  // The vector path: inner strides 1 or 0 (the output's 1), aligned rows.
  bool vec = a.op[0].strides[in] == 1;
  unsigned bcast = 0;
  for (int k = 0; k < N && vec; ++k) {
    const std::int64_t s = a.op[k].strides[in];
    if (s == 0) {
      bcast |= 1u << k;
      continue;
    }
    const std::size_t align = kSizes[k] * VEC < 16 ? kSizes[k] * VEC : 16;
    vec = s == 1 && reinterpret_cast<std::uintptr_t>(a.op[k].data) % align == 0;
    for (int d = 0; d < in && vec; ++d) vec = a.op[k].strides[d] % VEC == 0;
  }
  if (vec && a.ndim > 1) vec = small && a.shape[in] % VEC == 0;
  if (vec) {
    const auto p = make_params<N, std::int32_t>(a);
    const int grid = a.ndim == 1
                         ? grid_flat(numel / VEC)
                         : grid_for(numel / VEC > 0 ? numel / VEC : 1, kThreads * kVecUnroll);
    CUDA_CHECK(
        launch_kernel(ew_vec_kernel<VEC, Op, Out, Ins...>, grid, kThreads, 0, st, p, bcast, op));
    return;
  }
  if constexpr (sizeof...(Ins) >= 1) {
    if (const unsigned tm = tiled_mask(a, N); tm != 0) {
      if constexpr (sizeof(Out) == 2 && ((sizeof(Ins) == 2) && ...)) {
        if (ew_variant_tiled16() && tiled16_fits(a, N, tm)) {
          const std::int64_t tiles = numel / (a.shape[a.ndim - 1] * a.shape[a.ndim - 2]) *
                                     ((a.shape[a.ndim - 2] + kT16 - 1) / kT16) *
                                     ((a.shape[a.ndim - 1] + kT16 - 1) / kT16);
          CUDA_CHECK(launch_kernel(ew_tiled16_kernel<Op, Out, Ins...>, grid_for(tiles, 1),
                                   kT16Threads, 0, st, make_params<N, std::int64_t>(a), tm, op));
          return;
        }
      }
      const std::int64_t rc = a.shape[a.ndim - 1] * a.shape[a.ndim - 2];
      const std::int64_t tiles = numel / rc * ((a.shape[a.ndim - 2] + kTile - 1) / kTile) *
                                 ((a.shape[a.ndim - 1] + kTile - 1) / kTile);
      CUDA_CHECK(launch_kernel(ew_tiled_kernel<Op, Out, Ins...>,
                               grid_for(tiles, kThreads / (kTile * kTileRows)), kTile * kTileRows,
                               0, st, make_params<N, std::int64_t>(a), tm, op));
      return;
    }
  }
  if (small) {
    CUDA_CHECK(launch_kernel(ew_strided_kernel<std::int32_t, Op, Out, Ins...>,
                             grid_for(numel, kThreads * kStridedUnroll), kThreads, 0, st,
                             make_params<N, std::int32_t>(a), op));
  } else {
    CUDA_CHECK(launch_kernel(ew_strided_kernel<std::int64_t, Op, Out, Ins...>,
                             grid_for(numel, kThreads * kStridedUnroll), kThreads, 0, st,
                             make_params<N, std::int64_t>(a), op));
  }
}

}  // namespace strata::cuda
