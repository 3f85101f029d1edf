#pragma once
// NumPy .npy files in and out of tensors (format versions 1.0 to 3.0).
//
// dtypes: float32, float64, float16, int32, int64 and bool, both ways.
// NumPy has no bfloat16, so a bf16 tensor is refused on save unless
// NpyWriteOptions::bf16_as_f32 is set; it is then written as float32, which
// holds every bf16 value exactly (loading that file gives an f32 tensor).
#include <string>

#include "strata/tensor.hpp"

namespace strata {

struct NpyWriteOptions {
  bool bf16_as_f32 = false;  // write bf16 as float32 instead of refusing it
};

// Loads a float32, float64, float16, int32, int64 or bool .npy file (C or
// Fortran order, either byte order) as a host tensor that borrows the loaded
// buffer: a Fortran-order file becomes a column-major strided view, never a
// copy. Any problem with the file (missing, not .npy, malformed header,
// another dtype, more than kMaxDims dims, truncated or over-long data) is a
// strata::Error of one line, "<what> '<path>': ..."; `what` names the
// argument the path came from (a command-line option, say).
Tensor load_npy(const std::string& path, const std::string& what = "load_npy");

// The bytes of a C-order .npy file holding `t`'s logical values (any device,
// any layout: a view is made contiguous first) in t's dtype.
std::string npy_bytes(const Tensor& t, const NpyWriteOptions& opt = {});

// Writes npy_bytes(t) to `path` as a whole or not at all: a regular file
// (new or existing) is written to a temporary file beside it, flushed and
// renamed over it, so a failure or a crash leaves the old file or none,
// never a partial one; an existing file keeps its permission bits and a
// symlink is written through. Errors are strata::Error naming save_npy, the
// path and the reason, and nothing is written for a tensor that is refused.
void save_npy(const std::string& path, const Tensor& t, const NpyWriteOptions& opt = {});

// The dtype a tensor of dtype dt is written in (f32 for bf16 with
// bf16_as_f32; a strata::Error for bf16 without it).
DType npy_dtype(DType dt, const NpyWriteOptions& opt = {});

}  // namespace strata
