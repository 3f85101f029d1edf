// The attention harness's layouts, built from the generic layout
// primitives (op_layout.cpp; see layout_spec.hpp).
#include "layout_spec.hpp"

namespace strata::harness::detail {

namespace {

// Padding (before, after) of the last three dims for `sliced`: asymmetric so
// that offset, row stride and head stride all differ from the contiguous case.
ViewSpec sliced(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  const int n = r < 3 ? r : 3;
  const std::vector<std::int64_t> lo = {1, 2, 3}, hi = {1, 1, 2};  // dims -3, -2, -1
  return padded_spec(shape, {lo.end() - n, lo.end()}, {hi.end() - n, hi.end()});
}

// Stored once along the batch dims (or the head dim when there is no batch)
// and expanded with stride 0.
ViewSpec broadcast(const Shape& shape) {
  const int r = static_cast<int>(shape.size());
  if (r < 3) return contiguous_spec(shape);
  const int nb = r > 3 ? r - 3 : 1;  // dims to broadcast: batch, else the head
  std::vector<int> dims;
  for (int i = 0; i < nb; ++i) dims.push_back(i);
  return broadcast_spec(shape, dims);
}

}  // namespace

ViewSpec make_spec(const Shape& shape, Layout layout, Role role) {
  switch (layout) {
    case Layout::contiguous:
      return contiguous_spec(shape);
    case Layout::transposed:
      return transposed_spec(shape);
    case Layout::sliced:
    case Layout::fused_qkv:
      return sliced(shape);
    case Layout::strided_cols:
      return strided_last_spec(shape);
    case Layout::broadcast:
      return role == Role::k || role == Role::v ? broadcast(shape) : contiguous_spec(shape);
    case Layout::negative:
      switch (role) {
        case Role::q:
          return flipped_spec(shape, {-1});
        case Role::k:
        case Role::out:
          return flipped_spec(shape, {-2});
        case Role::v:
          return flipped_spec(shape, {-2, -1});
        case Role::lse:
        case Role::mask:
          return flipped_spec(shape, {-1});
      }
  }
  return contiguous_spec(shape);
}

}  // namespace strata::harness::detail
