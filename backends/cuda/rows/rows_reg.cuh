#pragma once
// The `reg` 16-bit row candidate (rows_variant.hpp, docs/ops-log.md "Rows16
// reg"): layer_norm and softmax on f16/bf16 rows of 2048, 4096 or 8192
// elements (256, 512 or 1024 vectors of 16 bytes) whose operands take
// 16-byte vectors. One block of 128, 256 or 512 threads per row at a time,
// two vectors per thread, so every thread holds the same count of elements;
// the row is widened to f32 once and held in registers until its store;
// layer_norm's weight and bias are loaded with the row, before the
// reduction. Each returns false, launching nothing, where it does not
// apply; the caller then runs the `fused` form.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/rows/rows.cuh"

namespace strata::cuda::fastrow {

// out = layer_norm(x, weight, bias) (p as norm's, RowParams of 4 operands).
template <class T>
bool norm_reg(const RowParams& p, int nv, cudaStream_t st);

// out = softmax(x) along the rows (p as softmax's).
template <class T>
bool softmax_reg(const RowParams& p, int nv, cudaStream_t st);

}  // namespace strata::cuda::fastrow
