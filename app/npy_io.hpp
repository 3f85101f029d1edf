#pragma once
// .npy files in and out of strata tensors, for the command-line tool.
#include <string>
#include <utility>
#include <vector>

#include "strata/tensor.hpp"

namespace strata::cli {

// Loads a float32, float64 or bool .npy file (C or Fortran order, any byte
// order) as a host tensor that borrows the loaded buffer: a Fortran-order
// file becomes a column-major strided view, never a copy. Throws
// strata::Error("<what> '<path>': ...") on any problem with the file.
Tensor load_npy(const std::string& path, const std::string& what);

// The bytes of a C-order .npy file holding `t` (any device, any layout) in
// t's dtype (f32, f64 or bool).
std::string npy_bytes(const Tensor& t);

// Checks early (before any long computation) that `path` could be created:
// its directory exists and is writable. Throws naming `what` otherwise.
void check_writable(const std::string& path, const std::string& what);

// Writes every (path, bytes) pair, all or nothing as far as the filesystem
// allows: each goes to a temporary file in its target's directory, and only
// when every temporary is complete are they renamed over the targets. On
// failure the temporaries are removed and no target is created or changed.
void write_files_atomically(const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace strata::cli
