// Views: each one builds a new (shape, strides, offset) over the same storage
// and goes through with_layout, which checks it against the storage extent.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>

#include "strata/detail/checked_math.hpp"
#include "strata/tensor.hpp"

namespace strata {
namespace {
// An empty view touches no memory, so its strides are not bounded by the
// extent check and offset arithmetic on them may overflow: skip it.
bool has_zero(const Shape& s) {
  for (std::int64_t v : s)
    if (v == 0) return true;
  return false;
}
}  // namespace

namespace {

// Strides that read a tensor of `old_shape`/`old_strides` as `new_shape`
// without copying, or false when its elements do not line up. Groups of old
// dims that are contiguous with each other may be split or merged freely
// (the rule PyTorch's view() uses).
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape,
                  Shape* new_strides) {
  new_strides->assign(new_shape.size(), 1);
  if (shape_numel(old_shape) == 0) {  // an empty view touches nothing: any strides do
    std::int64_t run = 1;
    for (std::size_t i = new_shape.size(); i-- > 0;) {
      (*new_strides)[i] = run;
      // Past int64 the remaining (outer) strides are 0: nothing is read.
      if (!detail::mul_ok(run, std::max<std::int64_t>(new_shape[i], 1), &run)) run = 0;
    }
    return true;
  }
  if (old_shape.empty()) return true;  // a scalar becomes all size-1 dims
  std::int64_t view_d = static_cast<std::int64_t>(new_shape.size()) - 1;
  std::int64_t chunk_base_stride = old_strides.back();
  std::int64_t tensor_numel = 1;
  std::int64_t view_numel = 1;
  for (std::int64_t tensor_d = static_cast<std::int64_t>(old_shape.size()) - 1; tensor_d >= 0;
       --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    // A chunk ends where the next-outer dim is not laid out right after this one.
    const bool chunk_ends =
        tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      (*new_strides)[view_d] = view_numel * chunk_base_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return false;
    if (tensor_d > 0) {
      chunk_base_stride = old_strides[tensor_d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  return view_d == -1;
}

// Resolves one -1 entry and checks the element count matches.
Shape infer_shape(const Shape& shape, std::int64_t numel, const char* op) {
  Shape out = shape;
  int infer_at = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      STRATA_CHECK(infer_at < 0, op, "shape ", shape_str(shape), " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    STRATA_CHECK(shape[i] >= 0, op, "negative size ", shape[i], " in shape ", shape_str(shape));
    known = detail::mul_or_fail(
        known, shape[i], op, " (shape ", [&] { return shape_str(shape); }, ")");
  }
  if (infer_at >= 0) {
    STRATA_CHECK(known != 0, op, "cannot infer the -1 in shape ", shape_str(shape),
                 " alongside a size-0 dim");
    STRATA_CHECK(numel % known == 0, op, "shape ", shape_str(shape), " is invalid for ", numel,
                 " elements");
    out[infer_at] = numel / known;
  } else {
    STRATA_CHECK(known == numel, op, "shape ", shape_str(shape), " is invalid for ", numel,
                 " elements");
  }
  return out;
}

}  // namespace

Tensor Tensor::slice(int dim, Slice s) const {
  const char* op = "Tensor::slice";
  const int d = wrap_dim(dim, op);
  const std::int64_t n = shape_[d];
  STRATA_CHECK(s.step != 0, op, "step 0 for dim ", d);
  STRATA_CHECK(s.step != std::numeric_limits<std::int64_t>::min(), op, "step ", s.step,
               " cannot be negated");
  // Indices may be negative (from the end) but must lie in [-n, n]; a missing
  // bound means "from the first / to past the last" element in the direction
  // of step, as in Python.
  const auto bound = [&](std::optional<std::int64_t> v, const char* what) {
    STRATA_CHECK(*v >= -n && *v <= n, op, what, " ", *v, " out of range for dim ", d, " of size ",
                 n);
    return *v < 0 ? *v + n : *v;
  };
  std::int64_t start = 0, length = 0;
  if (s.step > 0) {
    start = s.start ? bound(s.start, "start") : 0;
    const std::int64_t stop = s.stop ? bound(s.stop, "stop") : n;
    length = start < stop ? (stop - start - 1) / s.step + 1 : 0;
  } else {
    start = s.start ? std::min(bound(s.start, "start"), n - 1) : n - 1;
    const std::int64_t stop = s.stop ? bound(s.stop, "stop") : -1;
    length = stop < start ? (start - stop - 1) / -s.step + 1 : 0;
  }
  Shape shape = shape_, strides = strides_;
  shape[d] = length;
  if (length > 1)
    strides[d] = detail::mul_or_fail(strides_[d], s.step, op, " (stride of dim ", d, ")");
  // Inside the checked extent when the view has elements; an empty view's
  // strides are unchecked, so its offset does not move.
  const std::int64_t offset =
      length > 0 && !has_zero(shape_) ? offset_ + start * strides_[d] : offset_;
  return with_layout(std::move(shape), std::move(strides), offset, op);
}

Tensor Tensor::slice(int dim, std::int64_t start, std::int64_t stop, std::int64_t step) const {
  return slice(dim, Slice{start, stop, step});
}

Tensor Tensor::select(int dim, std::int64_t index) const {
  const char* op = "Tensor::select";
  const int d = wrap_dim(dim, op);
  const std::int64_t n = shape_[d];
  STRATA_CHECK(index >= -n && index < n, op, "index ", index, " out of range for dim ", d,
               " of size ", n);
  const std::int64_t i = index < 0 ? index + n : index;
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  const std::int64_t offset = has_zero(shape_) ? offset_ : offset_ + i * strides_[d];
  return with_layout(std::move(shape), std::move(strides), offset, op);
}

Tensor Tensor::narrow(int dim, std::int64_t start, std::int64_t length) const {
  const char* op = "Tensor::narrow";
  const int d = wrap_dim(dim, op);
  const std::int64_t n = shape_[d];
  STRATA_CHECK(start >= -n && start <= n, op, "start ", start, " out of range for dim ", d,
               " of size ", n);
  const std::int64_t s = start < 0 ? start + n : start;
  STRATA_CHECK(length >= 0 && length <= n - s, op, "length ", length, " from start ", s,
               " runs past dim ", d, " of size ", n);
  Shape shape = shape_;
  shape[d] = length;
  const std::int64_t offset = length > 0 && !has_zero(shape_) ? offset_ + s * strides_[d] : offset_;
  return with_layout(std::move(shape), strides_, offset, op);
}

Tensor Tensor::transpose(int d0, int d1) const {
  const char* op = "Tensor::transpose";
  const int a = wrap_dim(d0, op), b = wrap_dim(d1, op);
  Shape shape = shape_, strides = strides_;
  std::swap(shape[a], shape[b]);
  std::swap(strides[a], strides[b]);
  return with_layout(std::move(shape), std::move(strides), offset_, op);
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  const char* op = "Tensor::permute";
  std::ostringstream given;
  for (std::size_t i = 0; i < dims.size(); ++i) given << (i ? ", " : "") << dims[i];
  STRATA_CHECK(static_cast<int>(dims.size()) == dim(), op, "dims [", given.str(), "] has ",
               dims.size(), " entries for a ", dim(), "-d tensor");
  std::vector<bool> seen(dims.size(), false);
  Shape shape(dims.size()), strides(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const int d = wrap_dim(dims[i], op);
    STRATA_CHECK(!seen[d], op, "dims [", given.str(), "] repeats dim ", d);
    seen[d] = true;
    shape[i] = shape_[d];
    strides[i] = strides_[d];
  }
  return with_layout(std::move(shape), std::move(strides), offset_, op);
}

Tensor Tensor::unsqueeze(int dim) const {
  const char* op = "Tensor::unsqueeze";
  const int n = this->dim();
  STRATA_CHECK(dim >= -(n + 1) && dim <= n, op, "dim ", dim, " out of range for a ", n,
               "-d tensor (allowed ", -(n + 1), " to ", n, ")");
  STRATA_CHECK(n < kMaxDims, op, "a ", n, "-d tensor cannot gain a dim; at most ", kMaxDims,
               " are supported");
  const int d = dim < 0 ? dim + n + 1 : dim;
  // Any stride is valid for a size-1 dim; this one keeps contiguous tensors contiguous.
  std::int64_t stride = 1;
  if (d < n && !detail::mul_ok(shape_[d], strides_[d], &stride)) stride = 1;
  Shape shape = shape_, strides = strides_;
  shape.insert(shape.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return with_layout(std::move(shape), std::move(strides), offset_, op);
}

Tensor Tensor::squeeze(int dim) const {
  const char* op = "Tensor::squeeze";
  const int d = wrap_dim(dim, op);
  STRATA_CHECK(shape_[d] == 1, op, "dim ", d, " has size ", shape_[d], ", not 1");
  Shape shape = shape_, strides = strides_;
  shape.erase(shape.begin() + d);
  strides.erase(strides.begin() + d);
  return with_layout(std::move(shape), std::move(strides), offset_, op);
}

Tensor Tensor::squeeze() const {
  Shape shape, strides;
  for (int d = 0; d < dim(); ++d) {
    if (shape_[d] == 1) continue;
    shape.push_back(shape_[d]);
    strides.push_back(strides_[d]);
  }
  return with_layout(std::move(shape), std::move(strides), offset_, "Tensor::squeeze");
}

Tensor Tensor::expand(const Shape& shape) const {
  const char* op = "Tensor::expand";
  STRATA_CHECK(defined(), op, "tensor is undefined");
  STRATA_CHECK(shape.size() >= shape_.size(), op, "target shape ", shape_str(shape),
               " has fewer dims than ", shape_str(shape_));
  STRATA_CHECK(shape.size() <= static_cast<std::size_t>(kMaxDims), op, "target shape ",
               shape_str(shape), " has ", shape.size(), " dims; at most ", kMaxDims,
               " are supported");
  const std::size_t lead = shape.size() - shape_.size();
  Shape out(shape.size()), strides(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const std::int64_t t = shape[i];
    if (i < lead) {
      STRATA_CHECK(t >= 0, op, "size ", t, " for new leading dim ", i, " of target ",
                   shape_str(shape), " must be non-negative");
      out[i] = t;
      strides[i] = 0;
      continue;
    }
    const std::size_t j = i - lead;
    STRATA_CHECK(t >= -1, op, "negative size ", t, " in target ", shape_str(shape));
    if (t == -1 || t == shape_[j]) {
      out[i] = shape_[j];
      strides[i] = strides_[j];
    } else {
      STRATA_CHECK(shape_[j] == 1, op, "cannot expand dim ", j, " of size ", shape_[j], " to ", t,
                   " (shape ", shape_str(shape_), " to ", shape_str(shape), ")");
      out[i] = t;
      strides[i] = 0;
    }
  }
  return with_layout(std::move(out), std::move(strides), offset_, op);
}

Tensor Tensor::flip(int dim) const {
  const char* op = "Tensor::flip";
  const int d = wrap_dim(dim, op);
  Shape strides = strides_;
  STRATA_CHECK(strides_[d] != std::numeric_limits<std::int64_t>::min(), op, "stride ", strides_[d],
               " of dim ", d, " cannot be negated");
  strides[d] = -strides_[d];
  std::int64_t offset = offset_;
  // Inside the checked extent when the view has elements.
  if (!has_zero(shape_)) offset += (shape_[d] - 1) * strides_[d];
  return with_layout(shape_, std::move(strides), offset, op);
}

Tensor Tensor::reshape(const Shape& shape) const {
  const char* op = "Tensor::reshape";
  STRATA_CHECK(defined(), op, "tensor is undefined");
  STRATA_CHECK(shape.size() <= static_cast<std::size_t>(kMaxDims), op, "shape ", shape_str(shape),
               " has ", shape.size(), " dims; at most ", kMaxDims, " are supported");
  Shape target = infer_shape(shape, numel(), op);
  Shape strides;
  STRATA_CHECK(view_strides(shape_, strides_, target, &strides), op, "cannot view shape ",
               shape_str(shape_), " with strides ", shape_str(strides_), " as ", shape_str(target),
               " without copying; use reshape_copy()");
  return with_layout(std::move(target), std::move(strides), offset_, op);
}

Tensor Tensor::reshape_copy(const Shape& shape) const {
  STRATA_CHECK(defined(), "Tensor::reshape_copy", "tensor is undefined");
  infer_shape(shape, numel(), "Tensor::reshape_copy");  // fail before copying
  return clone().reshape(shape);
}

Tensor Tensor::as_strided(const Shape& shape, const Shape& strides,
                          std::optional<std::int64_t> offset) const {
  return with_layout(shape, strides, offset.value_or(offset_), "Tensor::as_strided");
}

}  // namespace strata
