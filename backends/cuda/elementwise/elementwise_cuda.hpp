#pragma once
// The cuda elementwise kernels as (op, dtype, entry point) tables, one per
// .cu file, so that register_elementwise.cpp registers them without CUDA
// headers. Each entry runs an IterArgs built by the front end (docs/guide/ops.md).
#include <vector>

#include "strata/dtype.hpp"
#include "strata/iter_args.hpp"

namespace strata::cuda {

struct EwEntry {
  const char* op;
  DType dtype;  // the registry key: the output's dtype
  void (*run)(const IterArgs&);
};

std::vector<EwEntry> ew_binary_entries();   // ew_binary.cu: add, sub, mul, div
std::vector<EwEntry> ew_unary_entries();    // ew_unary.cu: neg .. silu
std::vector<EwEntry> ew_scalar_entries();   // ew_scalar.cu: add_scalar .. rdiv_scalar
std::vector<EwEntry> ew_cast_entries();     // ew_cast.cu: cast (every dtype pair)
std::vector<EwEntry> ew_misc_entries();     // ew_misc.cu: where, fill (every dtype)
std::vector<EwEntry> ew_compare_entries();  // ew_compare.cu: gt .. ne, gt_scalar .. ne_scalar
std::vector<EwEntry> ew_indexed_entries();  // ew_indexed.cu: tril, triu (every dtype), dropout

// STRATA_EW_VARIANT (ew_variant.cpp, read once): unset or "tiled16" sends
// 16-bit iterations with a transposed input through ew_tiled16.cuh's kernel;
// "base" keeps ew_tiled.cuh's, in a tuning build only (elsewhere it is a
// strata::Error).
bool ew_variant_tiled16();

}  // namespace strata::cuda
