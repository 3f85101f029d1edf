// cuda topk (op[0] = values, op[1] = indices i64, op[2] = x narrowed to the
// outputs' row of k; iparam[0] = x's row length n, iparam[1] = largest;
// docs/guide/ops.md) on f32, f64, f16, bf16. A block of kRowThreads owns
// one row at a time. Every element is ranked by (order key descending,
// position ascending) -- the key from common/select_functors.hpp, as on the
// cpu, so NaN ranks above every number, -0 ties +0 and ties go to the
// lower index -- a strict total order, so the result is the cpu's exactly.
//   * n <= kSortCap: the row's keys and positions sorted whole in shared
//     memory (a bitonic sort over the next power of two, padded with
//     entries that rank last), then the first k written.
//   * longer rows: k rounds of a block-wide selection, each picking the
//     best element ranked after the previous pick (one pass over the row
//     per output: k x n work, meant for the small k of sampling; a
//     radix select is the way to large k on long rows).
// The values are copied from x at the chosen positions (exact).
#include <cstdint>

#include "common/select_functors.hpp"
#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

constexpr int kSortCap = 2048;  // 2048 x 12 bytes of shared memory
constexpr std::uint32_t kNoPos = 0xffffffffu;

// True when (ka, pa) ranks before (kb, pb).
__device__ __forceinline__ bool ranks_before(std::uint64_t ka, std::uint32_t pa, std::uint64_t kb,
                                             std::uint32_t pb) {
  return ka > kb || (ka == kb && pa < pb);
}

template <class T>
__device__ __forceinline__ std::uint64_t key_at(const T* x, std::int64_t sx, std::int64_t j,
                                                bool largest) {
  return fn::topk_key(cvt<double>(x[j * sx]), largest);
}

template <class T>
__device__ __forceinline__ void write_pick(const RowParams& p,
                                           const std::int64_t (&off)[kMaxOperands], const T* x,
                                           std::int64_t r, std::uint32_t pos) {
  reinterpret_cast<T*>(p.ptr[0])[off[0] + r * p.row_stride[0]] = x[pos * p.row_stride[2]];
  reinterpret_cast<std::int64_t*>(p.ptr[1])[off[1] + r * p.row_stride[1]] = pos;
}

template <class T>
__global__ void __launch_bounds__(kRowThreads) topk_sort_kernel(RowParams p) {
  grid_dependency_wait();
  allow_dependents();
  __shared__ std::uint64_t key[kSortCap];
  __shared__ std::uint32_t pos[kSortCap];
  const std::int64_t n = p.iparam[0], k = p.n;
  const bool largest = p.iparam[1] != 0;
  int size_p2 = 1;
  while (size_p2 < n) size_p2 <<= 1;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[2]) + off[2];
    __syncthreads();  // the previous row's readers are done
    for (int j = threadIdx.x; j < size_p2; j += blockDim.x) {
      const bool in = j < n;
      key[j] = in ? key_at(x, p.row_stride[2], j, largest) : 0;
      pos[j] = in ? static_cast<std::uint32_t>(j) : kNoPos;  // padding ranks last
    }
    for (int size = 2; size <= size_p2; size <<= 1) {
      for (int stride = size >> 1; stride > 0; stride >>= 1) {
        __syncthreads();
        for (int t = threadIdx.x; t < size_p2 / 2; t += blockDim.x) {
          const int i = 2 * t - (t & (stride - 1)), j = i + stride;
          // Ascending rank where bit `size` of i is clear, descending where set;
          // the last merge (size == size_p2) sorts the whole array by rank.
          const bool up = (i & size) == 0;
          if (ranks_before(key[j], pos[j], key[i], pos[i]) == up) {
            const std::uint64_t tk = key[i];
            key[i] = key[j];
            key[j] = tk;
            const std::uint32_t tp = pos[i];
            pos[i] = pos[j];
            pos[j] = tp;
          }
        }
      }
    }
    __syncthreads();
    for (int r = threadIdx.x; r < k; r += blockDim.x) write_pick(p, off, x, r, pos[r]);
  }
}

template <class T>
__global__ void __launch_bounds__(kRowThreads) topk_select_kernel(RowParams p) {
  grid_dependency_wait();
  allow_dependents();
  constexpr int kWarps = kRowThreads / 32;
  __shared__ std::uint64_t wkey[kWarps];
  __shared__ std::uint32_t wpos[kWarps];
  const std::int64_t n = p.iparam[0], k = p.n, sx = p.row_stride[2];
  const bool largest = p.iparam[1] != 0;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const T* x = reinterpret_cast<const T*>(p.ptr[2]) + off[2];
    std::uint64_t prev_key = 0;
    std::uint32_t prev_pos = kNoPos;
    for (std::int64_t r = 0; r < k; ++r) {
      // The best element ranked after the previous pick; (0, kNoPos) ranks
      // after every element.
      std::uint64_t bk = 0;
      std::uint32_t bp = kNoPos;
      for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const std::uint64_t kj = key_at(x, sx, j, largest);
        const auto pj = static_cast<std::uint32_t>(j);
        const bool after_prev = r == 0 || ranks_before(prev_key, prev_pos, kj, pj);
        if (after_prev && ranks_before(kj, pj, bk, bp)) {
          bk = kj;
          bp = pj;
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const std::uint64_t ok = __shfl_xor_sync(0xffffffffu, bk, o);
        const std::uint32_t op = __shfl_xor_sync(0xffffffffu, bp, o);
        if (ranks_before(ok, op, bk, bp)) {
          bk = ok;
          bp = op;
        }
      }
      __syncthreads();  // the previous round's readers are done
      if (lane == 0) {
        wkey[warp] = bk;
        wpos[warp] = bp;
      }
      __syncthreads();
      bk = wkey[0];
      bp = wpos[0];
      for (int w = 1; w < kWarps; ++w) {
        if (ranks_before(wkey[w], wpos[w], bk, bp)) {
          bk = wkey[w];
          bp = wpos[w];
        }
      }
      if (threadIdx.x == 0) write_pick(p, off, x, r, bp);
      prev_key = bk;
      prev_pos = bp;
    }
  }
}

template <class T>
void topk(const IterArgs& a) {
  const RowParams p = make_row_params(a);
  const std::int64_t n = a.iparam[0];
  check(n < std::int64_t(kNoPos), "topk", "the cuda kernel takes rows of fewer than 2^32 - 1 ",
        "elements, got ", n);
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const int grid = row_grid(p.rows, 1);
  if (n <= kSortCap)
    launch_row_kernel(topk_sort_kernel<T>, grid, kRowThreads, st, p);
  else
    launch_row_kernel(topk_select_kernel<T>, grid, kRowThreads, st, p);
}

}  // namespace

std::vector<EwEntry> row_topk_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({"topk", dt, &topk<typename decltype(t)::type>});
  });
  return v;
}

}  // namespace strata::cuda
