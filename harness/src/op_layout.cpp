// Layout realisation: the strides of each layout, computed directly (not
// through the view functions the runner helps to test), for the generic op
// runner and, through make_spec, for the attention harness.
#include <algorithm>

#include "layout_spec.hpp"
#include "strata/detail/enum_names.hpp"

namespace strata::harness {

std::vector<std::int64_t> view_positions(const ViewSpec& s) {
  const std::int64_t n = shape_numel(s.shape);
  std::vector<std::int64_t> pos;
  pos.reserve(static_cast<std::size_t>(n));
  if (n == 0) return pos;
  const int r = static_cast<int>(s.shape.size());
  std::vector<std::int64_t> idx(r, 0);
  std::int64_t p = s.offset;
  for (std::int64_t e = 0; e < n; ++e) {
    pos.push_back(p);
    for (int i = r - 1; i >= 0; --i) {  // odometer increment
      if (++idx[i] < s.shape[i]) {
        p += s.strides[i];
        break;
      }
      p -= (s.shape[i] - 1) * s.strides[i];
      idx[i] = 0;
    }
  }
  return pos;
}

std::string_view op_layout_name(OpLayout l) {
  static constexpr std::string_view kNames[] = {"contiguous", "transposed", "broadcast", "negative",
                                                "sliced",     "strided"};  // declaration order
  return strata::detail::enum_name(l, kNames);
}

const std::vector<OpLayout>& all_op_layouts() {
  static const std::vector<OpLayout> all = {OpLayout::contiguous, OpLayout::transposed,
                                            OpLayout::broadcast,  OpLayout::negative,
                                            OpLayout::sliced,     OpLayout::strided};
  return all;
}

ViewSpec layout_spec(const Shape& shape, OpLayout l, bool output) {
  using namespace detail;
  const int r = static_cast<int>(shape.size());
  if (r == 0) return contiguous_spec(shape);
  switch (l) {
    case OpLayout::contiguous:
      return contiguous_spec(shape);
    case OpLayout::transposed:
      return transposed_spec(shape);
    case OpLayout::broadcast: {
      if (output) return contiguous_spec(shape);
      for (int i = 0; i < r; ++i) {
        if (shape[i] > 1) return broadcast_spec(shape, {i});
      }
      return contiguous_spec(shape);
    }
    case OpLayout::negative:
      return r == 1 ? flipped_spec(shape, {0}) : flipped_spec(shape, {0, -1});
    case OpLayout::sliced: {
      // The middle third of a fused [.., n + n + (n + 1)] row, as k sits in a
      // fused QKV projection (with one column more, so rows are not 3n apart).
      const std::int64_t n = shape[r - 1];
      return padded_spec(shape, {n}, {n + 1});
    }
    case OpLayout::strided:
      return strided_last_spec(shape, 2);
  }
  return contiguous_spec(shape);
}

namespace detail {

Shape row_major_strides(const Shape& shape) {
  Shape st(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    st[i] = st[i + 1] * std::max<std::int64_t>(shape[i + 1], 1);
  }
  return st;
}

ViewSpec contiguous_spec(const Shape& shape) {
  return ViewSpec{shape, row_major_strides(shape), 0, shape_numel(shape)};
}

ViewSpec padded_spec(const Shape& shape, const std::vector<std::int64_t>& pad_lo,
                     const std::vector<std::int64_t>& pad_hi) {
  const int r = static_cast<int>(shape.size());
  const int k = static_cast<int>(pad_lo.size());
  Shape padded = shape;
  for (int t = 0; t < k; ++t) {
    const int i = r - k + t;
    if (i >= 0) padded[i] += pad_lo[t] + pad_hi[t];
  }
  ViewSpec s{shape, row_major_strides(padded), 0, shape_numel(padded)};
  for (int t = 0; t < k; ++t) {
    const int i = r - k + t;
    if (i >= 0) s.offset += pad_lo[t] * s.strides[i];
  }
  return s;
}

ViewSpec transposed_spec(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < 2) return contiguous_spec(shape);
  Shape stored = shape;
  std::swap(stored[r - 1], stored[r - 2]);
  ViewSpec s{shape, row_major_strides(stored), 0, shape_numel(shape)};
  std::swap(s.strides[r - 1], s.strides[r - 2]);
  return s;
}

ViewSpec strided_last_spec(const Shape& shape, std::int64_t step) {
  const int r = static_cast<int>(shape.size());
  if (r < 1) return contiguous_spec(shape);
  Shape wide = shape;
  wide[r - 1] = step * shape[r - 1] + 1;
  ViewSpec s{shape, row_major_strides(wide), 1, shape_numel(wide)};
  s.strides[r - 1] = step;
  return s;
}

ViewSpec flipped_spec(const Shape& shape, std::initializer_list<int> dims) {
  ViewSpec s = contiguous_spec(shape);
  const int r = static_cast<int>(shape.size());
  for (int d : dims) {
    const int i = d < 0 ? r + d : d;
    if (i < 0 || i >= r || shape[i] == 0 || s.strides[i] < 0) continue;
    s.offset += (shape[i] - 1) * s.strides[i];
    s.strides[i] = -s.strides[i];
  }
  return s;
}

ViewSpec broadcast_spec(const Shape& shape, const std::vector<int>& dims) {
  Shape stored = shape;
  for (int i : dims) stored[i] = 1;
  ViewSpec s{shape, row_major_strides(stored), 0, shape_numel(stored)};
  for (int i : dims) s.strides[i] = 0;
  return s;
}

}  // namespace detail
}  // namespace strata::harness
