// Strides for each harness Layout, computed directly (see layout_spec.hpp).
#include "layout_spec.hpp"

#include <algorithm>

namespace strata::harness::detail {

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

namespace {

// Padding (before, after) of the last three dims for `sliced`: asymmetric so
// that offset, row stride and head stride all differ from the contiguous case.
constexpr std::int64_t kPadLo[3] = {1, 2, 3};  // dims -3, -2, -1
constexpr std::int64_t kPadHi[3] = {1, 1, 2};

ViewSpec sliced(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  Shape padded = shape;
  for (int t = 0; t < 3; ++t) {
    const int i = r - 3 + t;
    if (i >= 0) padded[i] += kPadLo[t] + kPadHi[t];
  }
  ViewSpec s{shape, row_major_strides(padded), 0, shape_numel(padded)};
  for (int t = 0; t < 3; ++t) {
    const int i = r - 3 + t;
    if (i >= 0) s.offset += kPadLo[t] * s.strides[i];
  }
  return s;
}

ViewSpec transposed(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < 2) return contiguous_spec(shape);
  Shape stored = shape;
  std::swap(stored[r - 1], stored[r - 2]);
  ViewSpec s{shape, row_major_strides(stored), 0, shape_numel(shape)};
  std::swap(s.strides[r - 1], s.strides[r - 2]);
  return s;
}

ViewSpec strided_cols(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < 1) return contiguous_spec(shape);
  Shape wide = shape;
  wide[r - 1] = 2 * shape[r - 1] + 1;
  ViewSpec s{shape, row_major_strides(wide), 1, shape_numel(wide)};
  s.strides[r - 1] = 2;
  return s;
}

// Flips the listed dims (negative = from the end) of a contiguous spec.
ViewSpec flipped(const Shape& shape, std::initializer_list<int> dims) {
  ViewSpec s = contiguous_spec(shape);
  const int r = static_cast<int>(shape.size());
  for (int d : dims) {
    const int i = d < 0 ? r + d : d;
    if (i < 0 || i >= r || shape[i] == 0) continue;
    s.offset += (shape[i] - 1) * s.strides[i];
    s.strides[i] = -s.strides[i];
  }
  return s;
}

// Stored once along the batch dims (or the head dim when there is no batch)
// and expanded with stride 0.
ViewSpec broadcast(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < 3) return contiguous_spec(shape);
  Shape stored = shape;
  const int nb = r > 3 ? r - 3 : 1;  // dims to broadcast: batch, else the head
  for (int i = 0; i < nb; ++i) stored[i] = 1;
  ViewSpec s{shape, row_major_strides(stored), 0, shape_numel(stored)};
  for (int i = 0; i < nb; ++i) s.strides[i] = 0;
  return s;
}

}  // namespace

ViewSpec make_spec(const Shape& shape, Layout layout, Role role) {
  switch (layout) {
    case Layout::contiguous:
      return contiguous_spec(shape);
    case Layout::transposed:
      return transposed(shape);
    case Layout::sliced:
    case Layout::fused_qkv:
      return sliced(shape);
    case Layout::strided_cols:
      return strided_cols(shape);
    case Layout::broadcast:
      return role == Role::k || role == Role::v ? broadcast(shape) : contiguous_spec(shape);
    case Layout::negative:
      switch (role) {
        case Role::q:
          return flipped(shape, {-1});
        case Role::k:
        case Role::out:
          return flipped(shape, {-2});
        case Role::v:
          return flipped(shape, {-2, -1});
        case Role::lse:
        case Role::mask:
          return flipped(shape, {-1});
      }
  }
  return contiguous_spec(shape);
}

std::vector<std::int64_t> positions(const ViewSpec& s) {
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

}  // namespace strata::harness::detail
