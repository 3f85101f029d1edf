// cuda embedding_backward: table_grad [V, D] += grad [N, D] scattered by ids
// [N] (op[0], op[1], op[2]; docs/guide/ops.md) on f32, f64, f16, bf16.
// Deterministic without atomics: each table row's grad rows are summed in
// the order of their positions, in f32 (f64 for f64), and added once into
// table_grad; the result is the same bit for bit on either path:
//  * tiny calls (V x N up to kScanWork): a block owns one table row at a
//    time and its threads one column each; they walk every id in order (in
//    tiles held in shared memory) and sum the grad rows whose id is theirs.
//    The work is V x N id comparisons, one launch and no scratch.
//  * the rest: the positions are sorted by id (CUB's radix sort, which is
//    stable, so a run of equal ids keeps its positions in order), and a block
//    takes each run start, summing the run's grad rows. The work is the sort
//    plus one read of grad; a V x N walk over a 50k vocabulary was most of a
//    GPT-2 training step (docs/log/training.md).
//
// The ids are checked first as embedding checks them (first_bad_id, which
// synchronises the stream); while the stream is being captured the check is
// skipped and a bad id matches no row, so nothing outside table_grad is
// written.
#include <algorithm>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_ids.cuh"
#include "cuda/runtime/stream_scratch.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kIdTile = 1024;
// Calls of up to this many (table row, id) pairs take the scan.
constexpr std::int64_t kScanWork = std::int64_t(1) << 16;

template <class T>
struct ScatterParams {
  T* table_grad;
  std::int64_t tg_row, tg_col;
  const T* grad;
  std::int64_t g_row, g_col;
  const char* ids;
  std::int64_t ids_stride;
  std::int64_t n, d, vocab;
};

template <class T, class I>
__global__ void __launch_bounds__(kThreads) embedding_backward_kernel(ScatterParams<T> p) {
  using C = compute_t<T>;
  grid_dependency_wait();
  allow_dependents();
  __shared__ std::int64_t tile[kIdTile];
  for (std::int64_t v = blockIdx.x; v < p.vocab; v += gridDim.x) {
    for (std::int64_t j0 = 0; j0 < p.d; j0 += kThreads) {
      const std::int64_t j = j0 + threadIdx.x;
      C acc = C(0);
      bool hit = false;  // the same in every thread of the block
      for (std::int64_t t0 = 0; t0 < p.n; t0 += kIdTile) {
        const int m = static_cast<int>(p.n - t0 < kIdTile ? p.n - t0 : kIdTile);
        __syncthreads();
        for (int k = threadIdx.x; k < m; k += kThreads)
          tile[k] = load_id<I>(p.ids, (t0 + k) * p.ids_stride);
        __syncthreads();
        for (int k = 0; k < m; ++k) {
          if (tile[k] != v) continue;
          hit = true;
          if (j < p.d) acc += cvt<C>(p.grad[(t0 + k) * p.g_row + j * p.g_col]);
        }
      }
      if (hit && j < p.d) {
        T& o = p.table_grad[v * p.tg_row + j * p.tg_col];
        o = cvt<T>(cvt<C>(o) + acc);
      }
    }
  }
}

// Sort path, step 1: key = the id (V for one outside [0, V), which no run
// start takes), value = the position.
template <class I>
__global__ void __launch_bounds__(kThreads)
    embedding_keys_kernel(const char* ids, std::int64_t stride, std::int64_t n, std::int64_t vocab,
                          std::int32_t* keys, std::int32_t* positions) {
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t i = blockIdx.x * std::int64_t(kThreads) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * kThreads) {
    const std::int64_t id = load_id<I>(ids, i * stride);
    keys[i] = static_cast<std::int32_t>(id >= 0 && id < vocab ? id : vocab);
    positions[i] = static_cast<std::int32_t>(i);
  }
}

// Sort path, step 3: a block per run of equal sorted ids (found at its
// start), its threads a column each, summing the run's grad rows in
// position order.
template <class T>
__global__ void __launch_bounds__(kThreads)
    embedding_runs_kernel(ScatterParams<T> p, const std::int32_t* keys,
                          const std::int32_t* positions) {
  using C = compute_t<T>;
  grid_dependency_wait();
  allow_dependents();
  for (std::int64_t i = blockIdx.x; i < p.n; i += gridDim.x) {
    const std::int32_t v = keys[i];
    if (v >= p.vocab || (i > 0 && keys[i - 1] == v)) continue;
    for (std::int64_t j = threadIdx.x; j < p.d; j += kThreads) {
      C acc = C(0);
      for (std::int64_t k = i; k < p.n && keys[k] == v; ++k)
        acc += cvt<C>(p.grad[positions[k] * p.g_row + j * p.g_col]);
      T& o = p.table_grad[v * p.tg_row + j * p.tg_col];
      o = cvt<T>(cvt<C>(o) + acc);
    }
  }
}

// Steps 1-3 on `st`, with the keys, positions, their sorted copies and
// CUB's temporary storage in one piece of stream-ordered scratch.
template <class T>
void embedding_backward_sorted(const ScatterParams<T>& p, DType id_dtype, cudaStream_t st) {
  const int n = static_cast<int>(p.n);
  int bits = 1;  // enough for every key, V included
  while (bits < 31 && (std::int64_t(1) << bits) <= p.vocab) ++bits;
  std::size_t cub_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, cub_bytes, static_cast<std::int32_t*>(nullptr), static_cast<std::int32_t*>(nullptr),
      static_cast<std::int32_t*>(nullptr), static_cast<std::int32_t*>(nullptr), n, 0, bits, st));
  const std::size_t piece = (std::size_t(n) * sizeof(std::int32_t) + 255) / 256 * 256;
  const StreamScratch scratch(4 * piece + cub_bytes, st);
  auto* keys = scratch.at<std::int32_t>(0);
  auto* positions = scratch.at<std::int32_t>(piece);
  auto* sorted_keys = scratch.at<std::int32_t>(2 * piece);
  auto* sorted_positions = scratch.at<std::int32_t>(3 * piece);
  const int grid = static_cast<int>(
      std::min<std::int64_t>((p.n + kThreads - 1) / kThreads, std::int64_t(sm_count()) * 8));
  with_id_type(id_dtype, [&](auto i) {
    launch_row_kernel(embedding_keys_kernel<decltype(i)>, grid, kThreads, st, p.ids, p.ids_stride,
                      p.n, p.vocab, keys, positions);
  });
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(scratch.at<void>(4 * piece), cub_bytes, keys,
                                             sorted_keys, positions, sorted_positions, n, 0, bits,
                                             st));
  const int run_grid = static_cast<int>(std::min<std::int64_t>(p.n, std::int64_t(sm_count()) * 32));
  launch_row_kernel(embedding_runs_kernel<T>, run_grid, kThreads, st, p,
                    static_cast<const std::int32_t*>(sorted_keys),
                    static_cast<const std::int32_t*>(sorted_positions));
}

template <class T>
void embedding_backward(const IterArgs& a) {
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const Operand &tg = a.op[0], &g = a.op[1], &ids = a.op[2];
  ScatterParams<T> p{static_cast<T*>(tg.data),
                     tg.strides[0],
                     tg.strides[1],
                     static_cast<const T*>(g.data),
                     g.strides[0],
                     g.strides[1],
                     static_cast<const char*>(ids.data),
                     ids.strides[0],
                     a.shape[0],
                     a.shape[1],
                     tg.shape[0]};
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(st, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    const BadId bad = first_bad_index(ids, p.vocab, st, "embedding_backward id check");
    if (bad.row >= 0)
      fail("embedding_backward", "ids holds ", bad.id, " at index ", bad.row, ", outside [0, ",
           p.vocab, ")");
  }
  if (p.n == 0 || p.d == 0) return;
  // The sort's keys and positions are 32-bit.
  if (p.vocab * p.n > kScanWork && p.n < std::int64_t(1) << 31 && p.vocab < std::int64_t(1) << 30) {
    embedding_backward_sorted(p, ids.dtype, st);
    return;
  }
  const int grid = static_cast<int>(std::min<std::int64_t>(p.vocab, std::int64_t(sm_count()) * 32));
  with_id_type(ids.dtype, [&](auto i) {
    launch_row_kernel(embedding_backward_kernel<T, decltype(i)>, grid, kThreads, st, p);
  });
}

}  // namespace

std::vector<EwEntry> row_embedding_backward_entries() {
  std::vector<EwEntry> v;
  for_float_dtypes([&](DType dt, auto t) {
    v.push_back({"embedding_backward", dt, &embedding_backward<typename decltype(t)::type>});
  });
  return v;
}

}  // namespace strata::cuda
