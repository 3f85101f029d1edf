#pragma once
// The default launches of the `reg` 16-bit row kernels (rows_reg_kernels.cuh):
// layer_norm with eight vectors per thread and softmax with four, on f16/bf16
// rows of 2048, 4096 or 8192 elements whose operands take 16-byte vectors.
// Each returns false, launching nothing, where it does not apply; the caller
// then runs its next form.
#include <cuda_runtime.h>

#include "cuda/rows/rows.cuh"

namespace strata::cuda::fastrow {

// out = layer_norm(x, weight, bias) (p as norm's, RowParams of 4 operands).
template <class T>
bool norm_reg8(const RowParams& p, cudaStream_t st);

// out = softmax(x) along the rows (p as softmax's).
template <class T>
bool softmax_reg4(const RowParams& p, cudaStream_t st);

// Counts one launch of a reg kernel (the lab's included) for the testing
// hook rows_reg_launches_for_test.
void count_reg_launch();

}  // namespace strata::cuda::fastrow
