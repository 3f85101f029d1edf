// cuda embedding_backward: table_grad [V, D] += grad [N, D] scattered by ids
// [N] (op[0], op[1], op[2]; docs/guide/ops.md) on f32, f64, f16, bf16.
// Deterministic without atomics: a block owns one vocabulary row at a time
// and its threads one column each; they walk every id in order (in tiles
// held in shared memory) and sum the grad rows whose id is theirs, in f32
// (f64 for f64), adding once into table_grad. The work is V x N id
// comparisons, cheap for byte and small vocabularies; a sort by id first is
// the way to large ones (docs/guide/autograd.md).
//
// The ids are checked first as embedding checks them (first_bad_id, which
// synchronises the stream); while the stream is being captured the check is
// skipped and a bad id matches no row, so nothing outside table_grad is
// written.
#include <algorithm>
#include <cstdint>

#include "cuda/elementwise/ew_params.cuh"
#include "cuda/elementwise/ew_types.cuh"
#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_ids.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kIdTile = 1024;

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
  const int grid = static_cast<int>(std::min<std::int64_t>(p.vocab, std::int64_t(sm_count()) * 32));
  if (ids.dtype == DType::i32)
    launch_row_kernel(embedding_backward_kernel<T, std::int32_t>, grid, kThreads, st, p);
  else
    launch_row_kernel(embedding_backward_kernel<T, std::int64_t>, grid, kThreads, st, p);
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
