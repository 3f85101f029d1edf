// Registration of the cuda matmul kernels (one registry op, "matmul", which
// serves matmul and linear): the matrix-vector kernel first for the skinny
// calls it takes (M <= 8, unit-stride K; matmul_gemv.cu), cuBLAS for every
// floating dtype.
#include "cuda/matmul/matmul_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_matmul(Registry& r) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.gemv", &matmul_gemv,
                             &matmul_gemv_supports);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.cublas", &matmul_cublas,
                             &matmul_cublas_supports);
}

}  // namespace strata::cuda
