// Registration of the cuda matmul kernels (one registry op, "matmul", which
// serves matmul and linear): the matrix-vector kernels first for the skinny
// calls they take (up to 16 rows with a's rows and b's columns unit-stride
// along K: matmul_gemv.cu; up to 16 rows with b's rows unit-stride:
// matmul_gemv_multirow.cu), cuBLAS for every floating dtype.
#include "cuda/matmul/matmul_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_matmul(Registry& r) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.gemv", &matmul_gemv,
                             &matmul_gemv_supports);
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.gemv_multirow",
                             &matmul_gemv_multirow, &matmul_gemv_multirow_supports);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.cublas", &matmul_cublas,
                             &matmul_cublas_supports);
}

}  // namespace strata::cuda
