#pragma once
// Internal to the harness: the host buffers of one case and the views of
// them that make q, k, v and the mask, so the same views can be rebuilt on
// any device from copies of the buffers.
#include <cstdint>
#include <optional>
#include <vector>

#include "layout_spec.hpp"

namespace strata::harness::detail {

struct BufferView {
  int buffer = 0;
  ViewSpec spec;
};

struct CaseInputs {
  std::vector<Tensor> buffers;  // host, 1-D, contiguous; gaps hold NaN (or false)
  BufferView q, k, v;
  std::optional<BufferView> mask;
  AttentionOptions options;  // everything but the mask tensor
  Shape out_shape, lse_shape;
  Layout layout = Layout::contiguous;  // effective (fused_qkv may fall back to sliced)
};

CaseInputs plan_case_inputs(const AttentionCase& c);
Tensor view_of(const BufferView& bv, const std::vector<Tensor>& buffers);

// A 1-D host tensor of dtype dt holding `values` (converted).
Tensor host_tensor(const std::vector<double>& values, DType dt);
// A fresh contiguous host copy of a view's logical values, in dtype dt.
Tensor contiguous_copy(const Tensor& t, DType dt);

// Seeded values (the same on every platform): N(0, 1) and uniform [0, 1).
std::vector<double> randn_values(std::int64_t n, std::uint64_t seed);
std::vector<double> rand_values(std::int64_t n, std::uint64_t seed);
// Distinct, reproducible seeds per tensor of a case.
std::uint64_t sub_seed(std::uint64_t seed, int which);

}  // namespace strata::harness::detail
