#pragma once
// Internal to the harness: an op case's inputs (op_inputs.cpp).
#include <cstdint>
#include <vector>

#include "layout_spec.hpp"
#include "strata/op_harness.hpp"

namespace strata::harness::detail {

struct Planned {
  std::vector<Tensor> buffers;  // host, one per input
  std::vector<ViewSpec> specs;
  std::vector<DType> dtypes;
};

// Seeded values of every input of d in `layout` (gaps poisoned, see gap_value).
Planned plan_inputs(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed);
// The inputs as views on `dev` (fresh copies of the buffers there).
std::vector<Tensor> views_of(const Planned& p, Device dev);

}  // namespace strata::harness::detail
