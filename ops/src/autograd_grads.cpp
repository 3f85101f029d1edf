// The tape's gradient memory: each tracked buffer's gradient, allocated
// when first written (zeroed, or left unwritten where the first writes
// cover what they reach), borrowed seeds made the tape's own before a
// write, and contributions added in, summed back over broadcast dims
// (autograd_state.hpp).
#include <algorithm>
#include <utility>
#include <vector>

#include "autograd_state.hpp"
#include "strata/detail/op_checks.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"

namespace strata::autograd {

namespace {

// True when no element of region a is an element of region b (two views of
// one buffer): the same strides, the same sizes but along one dim k, apart
// along k by more than their extents, and strides nested (each at least the
// next smaller one times its dim's extent), so that an element's offset
// has one index per dim. False when that is not shown: the caller then
// adds rather than writes.
bool provably_disjoint(const Region& a, const Region& b) {
  const std::size_t nd = a.shape.size();
  if (b.shape.size() != nd || a.strides != b.strides) return false;
  const std::int64_t delta = b.offset - a.offset;
  for (std::size_t k = 0; k < nd; ++k) {
    const std::int64_t sk = a.strides[k];
    if (sk <= 0 || delta % sk != 0) continue;
    bool same = true;
    for (std::size_t d = 0; d < nd && same; ++d) same = d == k || a.shape[d] == b.shape[d];
    if (!same) continue;
    const std::int64_t m = delta / sk;
    if (m < a.shape[k] && m + b.shape[k] > 0) continue;  // the ranges along k meet
    // Every dim by stride, largest first, with the extent both regions use.
    std::vector<std::pair<std::int64_t, std::int64_t>> dims;  // (stride, extent)
    for (std::size_t d = 0; d < nd; ++d) {
      const std::int64_t extent =
          d == k ? std::max(a.shape[k], m + b.shape[k]) - std::min<std::int64_t>(0, m) : a.shape[d];
      if (extent > 1) dims.emplace_back(a.strides[d], extent);
    }
    std::sort(dims.begin(), dims.end(), [](const auto& x, const auto& y) { return x > y; });
    bool nested = true;
    for (std::size_t i = 0; i < dims.size() && nested; ++i)
      nested = dims[i].first > 0 && (i == 0 || dims[i - 1].first >= dims[i].first * dims[i].second);
    if (nested) return true;
  }
  return false;
}

}  // namespace

Tensor TapeState::grad_region(const Region& r, bool allocate, const OpOptions& opt, bool* fresh) {
  Buffer& b = bufs_.at(static_cast<std::size_t>(r.id));
  STRATA_CHECK(r.dtype == b.dtype, "autograd", "one storage is read as ", dtype_name(b.dtype),
               " and as ", dtype_name(r.dtype), "; gradients need one dtype per storage");
  if (fresh != nullptr) *fresh = false;
  if (allocate) own(b, opt);
  if (!b.grad.defined()) {
    if (!allocate) return {};
    const auto isz = static_cast<std::int64_t>(itemsize(b.dtype));
    const auto n = (static_cast<std::int64_t>(b.nbytes) + isz - 1) / isz;
    b.grad = Tensor::empty({n}, b.dtype, b.device);
    b.shift = 0;
    const Tensor view =
        Tensor::from_storage(b.grad.storage(), r.shape, r.strides, r.offset, r.dtype);
    // The caller's write reaches every element of the view: nothing to
    // zero where the view covers the buffer, and elsewhere only once it is
    // known which other regions get written (settle).
    if (fresh != nullptr && !::strata::detail::has_internal_overlap(view)) {
      if (view.numel() != n) b.written.push_back(r);
      *fresh = true;
      return view;
    }
    // Zeros by the device's fill op, on the caller's stream: Tensor::zeros
    // fills on the host and copies, which for a GPU tensor of activations'
    // size costs more than the backward's kernels.
    fill_(b.grad, 0.0, opt);
  } else if (!b.written.empty()) {
    const Tensor view =
        Tensor::from_storage(b.grad.storage(), r.shape, r.strides, r.offset, r.dtype);
    const bool apart = std::all_of(b.written.begin(), b.written.end(),
                                   [&](const Region& w) { return provably_disjoint(w, r); });
    if (fresh != nullptr && apart && !::strata::detail::has_internal_overlap(view)) {
      b.written.push_back(r);
      *fresh = true;
      return view;
    }
    settle(b, opt);
  }
  return Tensor::from_storage(b.grad.storage(), r.shape, r.strides, r.offset + b.shift, r.dtype);
}

// The written regions are pairwise disjoint: when they hold as many
// elements as the buffer they cover it, else the rest is zeroed by copying
// them into a zeroed buffer (no kernel zeroes the complement of strided
// regions).
void TapeState::settle(Buffer& b, const OpOptions& opt) {
  if (b.written.empty()) return;
  std::int64_t covered = 0;
  for (const Region& w : b.written) covered += shape_numel(w.shape);
  if (covered != b.grad.numel()) {
    const Tensor zeroed = Tensor::empty(b.grad.shape(), b.dtype, b.device);
    fill_(zeroed, 0.0, opt);
    for (const Region& w : b.written)
      copy_(Tensor::from_storage(zeroed.storage(), w.shape, w.strides, w.offset, w.dtype),
            Tensor::from_storage(b.grad.storage(), w.shape, w.strides, w.offset, w.dtype), opt);
    b.grad = zeroed;
  }
  b.written.clear();
}

void TapeState::own(Buffer& b, const OpOptions& opt) {
  if (!b.borrowed) return;
  const Tensor mine = Tensor::empty(b.grad.shape(), b.dtype, b.device);
  copy_(mine, b.grad, opt);
  b.grad = mine;
  b.shift = 0;
  b.borrowed = false;
}

namespace {

// g summed down to `shape` where the forward broadcast: leading dims g has
// beyond shape, and dims where shape has 1 and g another size (0 too).
Tensor sum_to_shape(Tensor g, const Shape& shape, const OpOptions& opt) {
  const int extra = g.dim() - static_cast<int>(shape.size());
  for (int d = 0; d < extra; ++d) g = sum(g, 0, false, opt);
  for (int d = 0; d < g.dim(); ++d)
    if (shape[static_cast<std::size_t>(d)] == 1 && g.size(d) != 1) g = sum(g, d, true, opt);
  return g;
}

}  // namespace

void TapeState::accumulate(const Region& r, Tensor g, const OpOptions& opt) {
  if (r.id < 0 || !g.defined()) return;
  const Device dev = bufs_.at(static_cast<std::size_t>(r.id)).device;
  // The forward's backend runs on the forward's device; after a copy across
  // devices, the input's side picks its own.
  const OpOptions on_dev = g.device() == dev ? opt : OpOptions{};
  if (g.device() != dev) g = g.to(dev);  // a copy across devices
  if (g.dtype() != r.dtype) g = cast(g, r.dtype);
  g = sum_to_shape(std::move(g), r.shape, on_dev);
  // A broadcast (stride 0) dim of the input view is one element of memory:
  // its gradient is the sum along that dim.
  Region target = r;
  const int lead = static_cast<int>(r.shape.size()) - g.dim();
  for (std::size_t d = 0; d < r.shape.size(); ++d) {
    if (r.strides[d] != 0 || r.shape[d] <= 1) continue;
    const int gd = static_cast<int>(d) - lead;
    if (gd >= 0 && g.size(gd) != 1) {
      g = sum(g, gd, true, on_dev);
    } else {  // g broadcasts along d too: each of the view's elements got it
      g = mul(g, static_cast<double>(r.shape[d]), on_dev);
    }
    target.shape[d] = 1;
  }
  Buffer& b = bufs_[static_cast<std::size_t>(r.id)];
  if (adopt(b, target, g)) return;
  bool fresh = false;
  const Tensor view = grad_region(target, true, on_dev, &fresh);
  if (fresh) {
    copy_(view, g, on_dev);  // the first contribution: no zeros to add to
  } else {
    add_out(view, view, g, on_dev);
  }
}

// The first contribution, laid out as the whole buffer and held by nothing
// else (a temporary the backward handed over, or one made in accumulate):
// it becomes the buffer's gradient as it is.
bool TapeState::adopt(Buffer& b, const Region& r, const Tensor& g) {
  if (b.grad.defined() || r.offset != 0 || g.offset() != 0 || g.shape() != r.shape ||
      !g.is_contiguous() || g.dtype() != b.dtype)
    return false;
  std::int64_t step = 1;  // r's strides must be the contiguous ones
  for (std::size_t d = r.shape.size(); d-- > 0;) {
    if (r.shape[d] != 1 && r.strides[d] != step) return false;
    step *= r.shape[d];
  }
  const std::shared_ptr<Storage>& s = g.storage();
  const auto bytes = static_cast<std::size_t>(g.numel()) * itemsize(b.dtype);
  if (s.use_count() != 1 || !s->owns_memory() || s->nbytes() != b.nbytes || bytes != b.nbytes)
    return false;
  b.grad = Tensor::from_storage(s, {g.numel()}, {1}, 0, b.dtype);
  b.shift = 0;
  return true;
}

}  // namespace strata::autograd
