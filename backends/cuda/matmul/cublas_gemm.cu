// blas_gemm (cublas_gemm.hpp): a planned GEMM through cublasGemmEx, its
// strided batched form, or its pointer-array form; and what describes a
// GEMM to cuBLAS (layouts, data and compute types).
#include <algorithm>
#include <climits>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/cublas_gemm.hpp"

namespace strata::cuda {
namespace {

// Pointer arrays for cublasGemmBatchedEx: [3][count] (x, y, c).
struct PtrParams {
  int rank;
  Index count;
  Index shape[kMaxDims];
  Index strides[3][kMaxDims];  // elements
  char* base[3];
  int item_bytes;
};

__global__ void fill_pointers(PtrParams p, void** out) {
  const Index i = Index(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= p.count) return;
  Index rest = i, off[3] = {0, 0, 0};
  for (int d = p.rank - 1; d >= 0; --d) {
    const Index idx = rest % p.shape[d];
    rest /= p.shape[d];
    for (int j = 0; j < 3; ++j) off[j] += idx * p.strides[j][d];
  }
  for (int j = 0; j < 3; ++j) out[j * p.count + i] = p.base[j] + off[j] * p.item_bytes;
}

// alpha/beta in the scale type (f64 for f64, else f32).
struct Scalars {
  double d[2];
  float f[2];
  const void* alpha(bool f64) const { return f64 ? static_cast<const void*>(&d[0]) : &f[0]; }
  const void* beta(bool f64) const { return f64 ? static_cast<const void*>(&d[1]) : &f[1]; }
};

}  // namespace

// op(stored) == x for a column-major stored matrix with leading dim ld.
BlasLayout as_blas(const BlasMatrix& x) {
  BlasLayout r;
  if ((x.rows == 1 || x.row_stride == 1) &&
      (x.cols == 1 || x.col_stride >= std::max<Index>(1, x.rows))) {
    r = {true, CUBLAS_OP_N, x.cols == 1 ? std::max<Index>(1, x.rows) : x.col_stride};
  } else if ((x.cols == 1 || x.col_stride == 1) &&
             (x.rows == 1 || x.row_stride >= std::max<Index>(1, x.cols))) {
    r = {true, CUBLAS_OP_T, x.rows == 1 ? std::max<Index>(1, x.cols) : x.row_stride};
  }
  if (r.ld > INT_MAX) r.ok = false;
  return r;
}

cudaDataType_t cuda_type(DType dt) {
  switch (dt) {
    case DType::f64:
      return CUDA_R_64F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

cublasComputeType_t compute_type(DType dt, Precision p) {
  if (dt == DType::f64) return CUBLAS_COMPUTE_64F;
  if (dt == DType::f32 && p == Precision::medium) return CUBLAS_COMPUTE_32F_FAST_TF32;
  return CUBLAS_COMPUTE_32F;  // f32 highest and high (no 3xTF32 in cuBLAS), f16, bf16
}

void blas_gemm(const CublasHandles& h, cudaStream_t st, Scratch& scratch, const Gemm& g, DType dt,
               cublasComputeType_t ct, bool accumulate) {
  const cudaDataType_t t = cuda_type(dt);
  const bool f64 = dt == DType::f64;
  Scalars s{{1.0, accumulate ? 1.0 : 0.0}, {1.0f, accumulate ? 1.0f : 0.0f}};
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int ldx = static_cast<int>(g.x_layout.ld), ldy = static_cast<int>(g.y_layout.ld);
  const int ldc = static_cast<int>(as_blas(g.c).ld);
  const cublasOperation_t opx = g.x_layout.op, opy = g.y_layout.op;
  if (g.uniform && g.count == 1) {
    CUBLAS_CHECK(cublasGemmEx(h.blas, opx, opy, m, n, k, s.alpha(f64), g.x.ptr, t, ldx, g.y.ptr, t,
                              ldy, s.beta(f64), g.c.ptr, t, ldc, ct, CUBLAS_GEMM_DEFAULT));
  } else if (g.uniform) {
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        h.blas, opx, opy, m, n, k, s.alpha(f64), g.x.ptr, t, ldx, g.x_batch_stride, g.y.ptr, t, ldy,
        g.y_batch_stride, s.beta(f64), g.c.ptr, t, ldc, g.c_batch_stride, static_cast<int>(g.count),
        ct, CUBLAS_GEMM_DEFAULT));
  } else {
    PtrParams p{};
    p.rank = g.batch_rank;
    p.count = g.count;
    for (int d = 0; d < g.batch_rank; ++d) {
      p.shape[d] = g.batch_shape[d];
      for (int j = 0; j < 3; ++j) p.strides[j][d] = g.batch_strides[j][d];
    }
    p.base[0] = g.x.ptr;
    p.base[1] = g.y.ptr;
    p.base[2] = g.c.ptr;
    p.item_bytes = static_cast<int>(itemsize(dt));
    void** ptrs = static_cast<void**>(scratch.get(sizeof(void*) * 3 * g.count));
    const int threads = 256;
    fill_pointers<<<static_cast<unsigned>((g.count + threads - 1) / threads), threads, 0, st>>>(
        p, ptrs);
    CUDA_CHECK_LAUNCH();
    CUBLAS_CHECK(cublasGemmBatchedEx(
        h.blas, opx, opy, m, n, k, s.alpha(f64), const_cast<const void* const*>(ptrs), t, ldx,
        const_cast<const void* const*>(ptrs + g.count), t, ldy, s.beta(f64), ptrs + 2 * g.count, t,
        ldc, static_cast<int>(g.count), ct, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace strata::cuda
