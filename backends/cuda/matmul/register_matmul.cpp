// Registration of the cuda matmul kernels (one registry op, "matmul", which
// serves matmul and linear): a hand-written kernel for skinny products
// (matmul_skinny.cu), cuBLAS for everything.
#include "cuda/matmul/matmul_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_matmul(Registry& r) {
  // First: the registry takes the first kernel whose supports() accepts.
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.skinny", &matmul_skinny,
                             &matmul_skinny_supports);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<MatmulArgs>("matmul", "cuda", dt, "cuda.matmul.cublas", &matmul_cublas,
                             &matmul_cublas_supports);
}

}  // namespace strata::cuda
