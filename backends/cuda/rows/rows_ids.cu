// first_bad_id (rows_ids.cuh): the device-side range check of embedding's
// ids, index_copy's index and cross_entropy's target.
#include "cuda/rows/rows_ids.cuh"

namespace strata::cuda {
namespace {

// has_allowed: `allowed` is fine too.
template <class I>
__global__ void __launch_bounds__(kRowThreads)
    check_ids_kernel(RowParams p, int k, std::int64_t limit, bool has_allowed, std::int64_t allowed,
                     unsigned long long* bad) {
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  for (std::int64_t row = std::int64_t(blockIdx.x) * kRowThreads + threadIdx.x; row < p.rows;
       row += std::int64_t(gridDim.x) * kRowThreads) {
    std::int64_t off[kMaxOperands];
    row_offsets(p, row, off);
    const std::int64_t id = load_id<I>(p.ptr[k], off[k]);
    if ((id < 0 || id >= limit) && !(has_allowed && id == allowed))
      atomicMin(bad, static_cast<unsigned long long>(row));
  }
}

}  // namespace

BadId first_bad_id(const RowParams& p, int k, DType dt, std::int64_t limit, cudaStream_t st,
                   const char* what, const std::int64_t* allowed) {
  const bool has_allowed = allowed != nullptr;
  const std::int64_t allow = has_allowed ? *allowed : 0;
  BadId r;
  if (p.rows == 0) return r;
  unsigned long long* bad = nullptr;
  CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&bad), sizeof *bad, st));
  unsigned long long found = ~0ull;
  cudaError_t err = cudaMemsetAsync(bad, 0xff, sizeof *bad, st);
  if (err == cudaSuccess) {
    const std::int64_t want = (p.rows + kRowThreads - 1) / kRowThreads;
    const int grid = static_cast<int>(want < std::int64_t(sm_count()) * 8 ? want : sm_count() * 8);
    // PDL: the kernel waits for the memset (and whatever ran before) first.
    err = with_id_type(dt, [&](auto i) {
      return launch_pdl(check_ids_kernel<decltype(i)>, grid, kRowThreads, 0, st, p, k, limit,
                        has_allowed, allow, bad);
    });
  }
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(&found, bad, sizeof found, cudaMemcpyDeviceToHost, st);
  if (err == cudaSuccess) err = cudaStreamSynchronize(st);
  (void)cudaFreeAsync(bad, st);
  if (err != cudaSuccess) throw_cuda_error(err, what, __FILE__, __LINE__);
  if (found == ~0ull) return r;
  // The id itself: one element of operand k, at the offset of row `found`.
  r.row = static_cast<std::int64_t>(found);
  std::int64_t row = r.row, off = 0;
  for (int j = 0; j < p.outer_dims; ++j) {
    off += (row % p.outer_shape[j]) * p.outer_strides[k][j];
    row /= p.outer_shape[j];
  }
  const std::size_t isz = dt == DType::i32 ? sizeof(std::int32_t) : sizeof(std::int64_t);
  std::int32_t id32 = 0;
  std::int64_t id64 = 0;
  void* dst = dt == DType::i32 ? static_cast<void*>(&id32) : static_cast<void*>(&id64);
  CUDA_CHECK(cudaMemcpyAsync(dst, p.ptr[k] + off * static_cast<std::int64_t>(isz), isz,
                             cudaMemcpyDeviceToHost, st));
  CUDA_CHECK(cudaStreamSynchronize(st));
  r.id = dt == DType::i32 ? id32 : id64;
  return r;
}

BadId first_bad_index(const Operand& index, std::int64_t limit, cudaStream_t st, const char* what) {
  RowParams q{};
  q.outer_dims = 1;
  q.rows = index.shape[0];
  q.n = 1;
  q.outer_shape[0] = index.shape[0];
  q.outer_strides[0][0] = index.strides[0];
  q.ptr[0] = static_cast<char*>(index.data);
  q.operand_count = 1;
  return first_bad_id(q, 0, index.dtype, limit, st, what);
}

}  // namespace strata::cuda
