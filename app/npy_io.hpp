#pragma once
// .npy files in and out of strata tensors, for the command-line tool.
#include <string>

#include "strata/tensor.hpp"

namespace strata::cli {

// Loads a float32, float64, float16, int32, int64 or bool .npy file (C or Fortran order, any byte
// order) as a host tensor that borrows the loaded buffer: a Fortran-order
// file becomes a column-major strided view, never a copy. Throws
// strata::Error("<what> '<path>': ...") on any problem with the file.
Tensor load_npy(const std::string& path, const std::string& what);

// The bytes of a C-order .npy file holding `t` (any device, any layout) in
// t's dtype (f32, f64, f16, i32, i64 or bool; bf16 is written as f32,
// since NumPy has no bfloat16).
std::string npy_bytes(const Tensor& t);

// The dtype npy_bytes writes a tensor of dtype `dt` in (f32 for bf16), for
// summaries that say what was written.
DType npy_dtype(DType dt);

}  // namespace strata::cli
