#pragma once
// Host-side entry points of the cuda matmul (matmul_cublas.cu,
// matmul_gemv.cu, matmul_gemv_multirow.cu), free of CUDA headers so that
// register_matmul.cpp compiles as plain C++.
#include <string>

#include "strata/matmul_args.hpp"

namespace strata::cuda {

// matmul and linear through cuBLAS / cuBLASLt; any dtype of f32, f64, f16,
// bf16 (the output's), arguments validated by the front end.
void matmul_cublas(const MatmulArgs& a);
// "" when matmul_cublas can run `a`, else the reason.
const char* matmul_cublas_supports(const MatmulArgs& a);

// out [M, N] (+)= a [M, K] b [K, N] (+ bias) for M <= 8 (9-16 on the
// rules of matmul_gemv.cu), K <= 16384, a's rows and b's columns
// unit-stride, no batch; f32, f16, bf16 (f32 sums).
void matmul_gemv(const MatmulArgs& a);
// "" when matmul_gemv can run `a`, else the reason (STRATA_CUDA_GEMV=0:
// never).
const char* matmul_gemv_supports(const MatmulArgs& a);

// out [M, N] (+)= a [M, K] b [K, N] (+ bias) for M <= 16, b's rows
// unit-stride and 16-byte aligned (row-major b), a any strides with
// (M rounded up to a power of 2) x K <= 32768, no batch; f32, f16, bf16
// (f32 sums, deterministic order).
void matmul_gemv_multirow(const MatmulArgs& a);
// "" when matmul_gemv_multirow can run `a`, else the reason
// (STRATA_CUDA_GEMV=0: never).
const char* matmul_gemv_multirow_supports(const MatmulArgs& a);

}  // namespace strata::cuda
