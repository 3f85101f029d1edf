// cuda index_copy (docs/guide/ops.md, "IterArgs conventions"): op[0] = dst with
// stride 0 at the indexed dim, op[1] = src, op[2] = the index laid along
// that dim; side = the index [T]; iparam[0] = dst's stride at the dim,
// iparam[1] = its size N. Every dtype, as its bytes (the kernel is
// templated on the element size). One warp per row of src's last dim, as
// embedding's gather: 16-byte vector loads and stores when both rows are
// unit-stride and aligned (a KV cache's head dim), else element by element.
//
// Out-of-range indices: when the stream is not being captured, every index
// is checked first on the device (first_bad_id, rows_ids.cu, shared with
// embedding; it synchronises the stream) and a bad one is a strata::Error
// before anything is written. While the stream is being captured into a
// graph nothing may synchronise, so the check is skipped, and the copy
// kernel itself skips every element whose index is outside [0, N): memory
// outside dst is never written. Everything runs on the op's stream.
#include <cstdint>

#include "cuda/rows/rows.cuh"
#include "cuda/rows/rows_cuda.hpp"
#include "cuda/rows/rows_ids.cuh"
#include "cuda/rows/rows_warp.cuh"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

template <class U, class I>
__global__ void __launch_bounds__(kRowThreads)
    index_copy_kernel(RowParams p, std::int64_t step, std::int64_t size) {
  grid_dependency_wait();  // launched with PDL: nothing is read before this
  allow_dependents();
  const int lane = threadIdx.x % 32;
  for_warp_rows(p, [&](const std::int64_t(&off)[kMaxOperands]) {
    U* dst = reinterpret_cast<U*>(p.ptr[0]) + off[0];
    const U* src = reinterpret_cast<const U*>(p.ptr[1]) + off[1];
    if (p.row_stride[2] == 0) {  // one index for the whole row
      const std::int64_t id = load_id<I>(p.ptr[2], off[2]);
      if (id < 0 || id >= size) return;  // only while capturing (checked otherwise)
      dst += id * step;
      constexpr int VEC = 16 / sizeof(U);
      if (p.vec) {
        for (std::int64_t e = std::int64_t(lane) * VEC; e < p.n; e += 32 * VEC)
          st_vec<U, VEC>(dst + e, ld_vec<U, VEC>(src + e));
      } else {
        for (std::int64_t e = lane; e < p.n; e += 32)
          dst[e * p.row_stride[0]] = src[e * p.row_stride[1]];
      }
    } else {  // the indexed dim is the row: one index per element
      for (std::int64_t e = lane; e < p.n; e += 32) {
        const std::int64_t id = load_id<I>(p.ptr[2], off[2] + e * p.row_stride[2]);
        if (id >= 0 && id < size) dst[e * p.row_stride[0] + id * step] = src[e * p.row_stride[1]];
      }
    }
  });
}

template <class U>
void index_copy(const IterArgs& a) {
  RowParams p = make_row_params(a);
  if (p.rows == 0 || p.n == 0) return;
  const cudaStream_t st = static_cast<cudaStream_t>(a.stream);
  const std::int64_t step = a.iparam[0], size = a.iparam[1];
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(st, &capture));
  if (capture == cudaStreamCaptureStatusNone) {
    const BadId bad = first_bad_index(a.side, size, st, "index_copy_ index check");
    if (bad.row >= 0)
      fail("index_copy_", "index holds ", bad.id, " at position ", bad.row, ", outside [0, ", size,
           ")");
  }
  constexpr int VEC = 16 / sizeof(U);
  // dst's and src's rows unit-stride, 16-byte aligned at every row (outer
  // strides and the index step multiples of VEC), n a multiple of VEC.
  p.vec = p.row_stride[2] == 0 && step % VEC == 0 && rows_vectorisable(a, 0b011, VEC, sizeof(U));
  const int grid = row_grid(p.rows, kWarpsPerBlock);
  with_id_type(a.op[2].dtype, [&](auto i) {
    launch_row_kernel(index_copy_kernel<U, decltype(i)>, grid, kRowThreads, st, p, step, size);
  });
}

}  // namespace

std::vector<EwEntry> row_index_copy_entries() {
  std::vector<EwEntry> v;
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64}) {
    switch (itemsize(dt)) {
      case 1:
        v.push_back({"index_copy", dt, &index_copy<std::uint8_t>});
        break;
      case 2:
        v.push_back({"index_copy", dt, &index_copy<std::uint16_t>});
        break;
      case 4:
        v.push_back({"index_copy", dt, &index_copy<std::uint32_t>});
        break;
      default:
        v.push_back({"index_copy", dt, &index_copy<std::uint64_t>});
        break;
    }
  }
  return v;
}

}  // namespace strata::cuda
