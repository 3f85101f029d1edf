#pragma once
// Host-side entry points of the cuda matmul (matmul_cublas.cu), free of CUDA
// headers so that register_matmul.cpp compiles as plain C++.
#include <string>

#include "strata/matmul_args.hpp"

namespace strata::cuda {

// matmul and linear through cuBLAS / cuBLASLt; any dtype of f32, f64, f16,
// bf16 (the output's), arguments validated by the front end.
void matmul_cublas(const MatmulArgs& a);
// "" when matmul_cublas can run `a`, else the reason.
std::string matmul_cublas_supports(const MatmulArgs& a);

}  // namespace strata::cuda
