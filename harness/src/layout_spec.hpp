#pragma once
// Internal to the harness: where each logical element of a tensor lives in
// a flat 1-D buffer. The primitives (contiguous, padded, transposed, strided
// last dim, flipped, broadcast) are the generic op runner's layout
// realisation (op_layout.cpp); make_spec maps the attention harness's
// layouts onto them. All strides are computed here, so the harness does
// not depend on the view functions it helps to test.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "strata/harness.hpp"
#include "strata/op_harness.hpp"

namespace strata::harness::detail {

using harness::ViewSpec;

// ---- primitives (op_layout.cpp) ----------------------------------------------------
Shape row_major_strides(const Shape& shape);
ViewSpec contiguous_spec(const Shape& shape);
// Row-major inside a buffer whose last pad_lo.size() dims are padded by
// pad_lo before and pad_hi after (the view is a window at an offset).
ViewSpec padded_spec(const Shape& shape, const std::vector<std::int64_t>& pad_lo,
                     const std::vector<std::int64_t>& pad_hi);
// Stored with the last two dims swapped (contiguous below rank 2).
ViewSpec transposed_spec(const Shape& shape);
// The last dim every `step`-th element of a wider row, starting at element 1.
ViewSpec strided_last_spec(const Shape& shape, std::int64_t step = 2);
// A contiguous spec with the listed dims (negative = from the end) walked backwards.
ViewSpec flipped_spec(const Shape& shape, std::initializer_list<int> dims);
// The listed dims stored once (size 1) and expanded with stride 0.
ViewSpec broadcast_spec(const Shape& shape, const std::vector<int>& dims);

// ---- the attention harness's layouts ---------------------------------------------------

// Which tensor a spec is for: layouts treat them a little differently (only
// k and v are broadcast; negative strides flip different dims of each).
enum class Role { q, k, v, out, lse, mask };

// Spec of `shape` in `layout` (fused_qkv is handled by the caller and maps
// to `sliced` here).
ViewSpec make_spec(const Shape& shape, Layout layout, Role role);

inline std::vector<std::int64_t> positions(const ViewSpec& s) { return view_positions(s); }

}  // namespace strata::harness::detail
