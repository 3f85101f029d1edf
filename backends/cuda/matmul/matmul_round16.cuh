#pragma once
// The one rounding of an f16/bf16 matmul with a bias or accumulate
// (matmul_cublas.cu): cuBLAS writes the product in f32, this pass adds the
// bias and out's old values and rounds once to out's type.
#include <cuda_runtime_api.h>

#include "strata/operand.hpp"

namespace strata::cuda {

// out [batch..., M, N] (f16 or bf16, any strides) =
//   round(acc + bias + (accumulate ? out : 0)),
// the sum exact in f64 (an f32 and two 16-bit terms) and rounded once to
// nearest even. acc: f32, contiguous row-major [batch..., M, N], or null
// for none (K = 0); bias: [N] of out's dtype, any stride, or null.
void round16_finish(const Operand& out, const float* acc, const Operand* bias, bool accumulate,
                    cudaStream_t st);

}  // namespace strata::cuda
