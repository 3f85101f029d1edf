#pragma once
// Internal to the harness: where each logical element of a tensor lives in
// a flat 1-D buffer, for every Layout. All strides are computed here, so
// the harness does not depend on the view functions it helps to test.
#include <cstdint>
#include <vector>

#include "strata/harness.hpp"

namespace strata::harness::detail {

// shape/strides/offset of a view into a flat buffer of `buffer_numel` elements.
struct ViewSpec {
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  std::int64_t buffer_numel = 0;
};

// Which tensor a spec is for: layouts treat them a little differently (only
// k and v are broadcast; negative strides flip different dims of each).
enum class Role { q, k, v, out, lse, mask };

// Spec of `shape` in `layout` (fused_qkv is handled by the caller and maps
// to `sliced` here).
ViewSpec make_spec(const Shape& shape, Layout layout, Role role);
ViewSpec contiguous_spec(const Shape& shape);
Shape row_major_strides(const Shape& shape);

// Buffer index of every logical element, in row-major logical order.
std::vector<std::int64_t> positions(const ViewSpec& s);

}  // namespace strata::harness::detail
