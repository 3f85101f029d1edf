// Registration of the cuda matmul kernels (one registry op, "matmul", which
// serves matmul and linear): the matrix-vector kernels first for the skinny
// calls they take (M <= 8, or 16 with STRATA_GEMV_MAX_M, unit-stride K: matmul_gemv.cu; M <= 16,
// b's rows unit-stride: matmul_gemv_rows.cu), cuBLAS for every floating dtype.
#include "cuda/matmul/matmul_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_matmul(Registry& r) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.gemv", &matmul_gemv,
                             &matmul_gemv_supports);
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.gemv_rows", &matmul_gemv_rows,
                             &matmul_gemv_rows_supports);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.cublas", &matmul_cublas,
                             &matmul_cublas_supports);
}

}  // namespace strata::cuda
