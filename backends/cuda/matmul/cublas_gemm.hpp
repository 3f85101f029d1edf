#pragma once
// One GEMM as cuBLAS sees it (column-major, c = x y), planned by
// matmul_cublas.cu from a MatmulArgs, and the two ways it runs:
// blas_gemm (cublasGemmEx and its batched forms, cublas_gemm.cu) and
// lt_gemm (cuBLASLt with the bias epilogue, cublaslt_epilogue.cu).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/matmul/cublas_context.hpp"
#include "strata/dtype.hpp"
#include "strata/matmul_args.hpp"

namespace strata::cuda {

using Index = std::int64_t;

// One matrix of the product: logical rows x cols at `ptr`, with strides in
// elements.
struct BlasMatrix {
  char* ptr = nullptr;
  Index rows = 0, cols = 0, row_stride = 0, col_stride = 0;
  BlasMatrix transposed() const { return {ptr, cols, rows, col_stride, row_stride}; }
};

// How cuBLAS reads a BlasMatrix: op(stored) == the matrix, stored
// column-major with leading dimension ld; ok false when it cannot.
struct BlasLayout {
  bool ok = false;
  cublasOperation_t op = CUBLAS_OP_N;
  Index ld = 0;
};
BlasLayout as_blas(const BlasMatrix& x);

struct Gemm {
  BlasMatrix x, y, c;  // c (m x n) = x (m x k) y (k x n), column-major sense
  BlasLayout x_layout, y_layout;
  Index m, n, k;
  // Batch: uniform (count, one stride per matrix) or pointer arrays over
  // the batch dims (batch_strides[x, y, c][dim]).
  bool uniform = true;
  Index count = 1, x_batch_stride = 0, y_batch_stride = 0, c_batch_stride = 0;
  int batch_rank = 0;
  Index batch_shape[kMaxDims] = {};
  Index batch_strides[3][kMaxDims] = {};
};

cudaDataType_t cuda_type(DType dt);
// f64 in 64F; f32 medium in 32F_FAST_TF32; everything else in 32F.
cublasComputeType_t compute_type(DType dt, Precision p);

// c = x y (+ c with accumulate: beta 1) through cublasGemmEx, its strided
// batched form, or its pointer-array form (arrays filled on the device, in
// `scratch`).
void blas_gemm(const CublasHandles& h, cudaStream_t st, Scratch& scratch, const Gemm& g, DType dt,
               cublasComputeType_t ct, bool accumulate);

// c = x y + bias (bias along c's rows; none when bias is null) through
// cuBLASLt; false when Lt has no algorithm for it (the caller falls back).
// With accumulate, beta = 1 and C = D: c = x y + c + bias. The batch must
// be uniform.
bool lt_gemm(const CublasHandles& h, cudaStream_t st, void* workspace, const Gemm& g, DType dt,
             cublasComputeType_t ct, const void* bias, bool accumulate);

}  // namespace strata::cuda
