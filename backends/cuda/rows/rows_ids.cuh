#pragma once
// Integer operands of the cuda row kernels (embedding's ids, rotary's
// positions, index_copy's index, cross_entropy's target): reading one, and
// the range check that embedding, index_copy and cross_entropy run before
// they write anything.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/rows/rows.cuh"
#include "strata/dtype.hpp"

namespace strata::cuda {

// Element `off` of an i32 or i64 operand (I) at `base`, widened.
template <class I>
__device__ __forceinline__ std::int64_t load_id(const char* base, std::int64_t off) {
  return static_cast<std::int64_t>(reinterpret_cast<const I*>(base)[off]);
}

// f(I{}) with I the index type of ids of dtype dt: std::int32_t for i32,
// std::int64_t otherwise (i64; the ops allow no other). The one place the
// launchers turn an ids operand's dtype into their kernels' I.
template <class F>
decltype(auto) with_id_type(DType dt, F&& f) {
  if (dt == DType::i32) return f(std::int32_t{});
  return f(std::int64_t{});
}

// The first id outside [0, limit), or row == -1 when there is none.
struct BadId {
  std::int64_t row = -1;  // its row of p (the order of row_offsets)
  std::int64_t id = 0;    // its value
};

// Checks the id of every row of `p` -- operand k's element at the row's
// offsets (row_offsets), of dtype `dt` (i32 or i64) -- on the device: a
// kernel records the smallest bad row (atomicMin in a cudaMallocAsync'd
// word), which is copied back, the stream synchronised, and the id read
// back when one is bad. Everything runs on `st`; the call blocks, so it must
// not run while `st` is being captured into a graph. `what` names the check
// in CUDA errors. With `allowed`, that value is fine too (cross_entropy's
// ignore_index).
BadId first_bad_id(const RowParams& p, int k, DType dt, std::int64_t limit, cudaStream_t st,
                   const char* what, const std::int64_t* allowed = nullptr);

// The same for a 1-D index operand [T] (index_copy's index, the ids of
// embedding_backward): its elements as rows of one element each.
BadId first_bad_index(const Operand& index, std::int64_t limit, cudaStream_t st, const char* what);

}  // namespace strata::cuda
