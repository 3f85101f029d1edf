// The tape: which memory is tracked, what each recorded op read and wrote,
// and the backward pass over them in reverse order (autograd_state.hpp;
// the gradients' memory: autograd_grads.cpp).
#include <algorithm>

#include "autograd_state.hpp"
#include "strata/detail/op_checks.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"

namespace strata::autograd {

TapeState* set_recording(TapeState* t) noexcept {
  TapeState* old = detail::t_recording_tape;
  detail::t_recording_tape = t;
  ::strata::detail::set_copy_observer(t);
  return old;
}

TapeState::TapeState(TapeState* outer) : outer_(outer) {}

TapeState::~TapeState() {
  if (recording_) pause();
}

void TapeState::start() {
  prev_tape_ = set_recording(this);
  recording_ = true;
}

void TapeState::pause() {
  if (!recording_) return;
  set_recording(prev_tape_);
  recording_ = false;
}

int TapeState::lookup(const Tensor& t) {
  if (!t.defined()) return -1;
  const auto it = ids_.find(t.storage().get());
  if (it != ids_.end()) {
    const Buffer& b = bufs_[static_cast<std::size_t>(it->second)];
    if (!b.storage.expired()) return it->second;
    ids_.erase(it);  // freed, and its address reused by new memory
  }
  if (outer_ != nullptr && outer_->lookup(t) >= 0) {
    const int id = track(t);  // a checkpoint reads memory the outer tape tracks
    bufs_[static_cast<std::size_t>(id)].outer_id = outer_->lookup(t);
    return id;
  }
  return -1;
}

int TapeState::track(const Tensor& t) {
  Buffer b;
  b.storage = t.storage();
  b.device = t.device();
  b.nbytes = t.storage()->nbytes();
  b.dtype = t.dtype();
  bufs_.push_back(std::move(b));
  const int id = static_cast<int>(bufs_.size() - 1);
  ids_[t.storage().get()] = id;
  return id;
}

Region TapeState::region_of(const Tensor& t, int id) const {
  return Region{id, t.shape(), t.strides(), t.offset(), t.dtype()};
}

void TapeState::record(const char* op, std::initializer_list<const Tensor*> inputs,
                       std::initializer_list<const Tensor*> outputs, std::vector<Tensor> saved,
                       BackwardFn backward, const OpOptions& opt) {
  auto node = std::make_unique<Node>();
  bool any_in = false, any_out = false;
  for (const Tensor* t : inputs) {
    const int id = t->defined() && is_floating(t->dtype()) ? lookup(*t) : -1;
    any_in = any_in || id >= 0;
    node->ins.push_back(id >= 0 ? region_of(*t, id) : Region{});
  }
  std::vector<int> out_ids;
  for (const Tensor* t : outputs) {
    out_ids.push_back(lookup(*t));
    any_out = any_out || out_ids.back() >= 0;
  }
  if (!any_in && !any_out) return;
  for (const Tensor* t : inputs) {
    if (!t->defined() || lookup(*t) < 0) continue;
    // Two elements of one memory cell (other than a broadcast) would need
    // their gradients summed into one: not supported.
    Tensor distinct = *t;
    for (int d = 0; d < t->dim(); ++d)
      if (t->stride(d) == 0)
        distinct = distinct.narrow(d, 0, std::min<std::int64_t>(1, t->size(d)));
    STRATA_CHECK(!::strata::detail::has_internal_overlap(distinct), op,
                 "an input overlaps itself (an as_strided window?); gradients need views whose "
                 "elements are distinct or broadcast (stride 0)");
  }
  std::size_t j = 0;
  for (const Tensor* t : outputs) {
    STRATA_CHECK(!::strata::detail::has_internal_overlap(*t), op,
                 "writes through a view whose elements share memory; gradients cannot flow");
    int id = out_ids[j++];
    const bool born = id < 0;
    if (born) {
      id = track(*t);
    } else {
      Buffer& b = bufs_[static_cast<std::size_t>(id)];
      STRATA_CHECK(!b.watched, op, "writes into a watched tensor while the tape records; ",
                   "update weights under autograd::NoGrad or after backward()");
      ++b.version;
    }
    node->outs.push_back(region_of(*t, id));
    node->born.push_back(born ? 1 : 0);
  }
  for (Tensor& s : saved) {
    const int id = lookup(s);
    const std::uint64_t v = id >= 0 ? bufs_[static_cast<std::size_t>(id)].version : 0;
    node->saved.push_back(Saved{std::move(s), id, v});
  }
  node->op = op;
  if (any_in) node->backward = std::move(backward);
  node->opt = opt;
  nodes_.push_back(std::move(node));
}

void TapeState::copied(const Tensor& dst, const Tensor& src) {
  record(
      "Tensor::copy_from", {&src}, {&dst}, {},
      [](GradContext& ctx) { ctx.accumulate(0, ctx.grad_out(0)); }, OpOptions{});
}

void TapeState::watch(const Tensor& t, const Tensor& grad) {
  const char* op = "autograd::Tape::watch";
  STRATA_CHECK(!done_, op, "the tape has already run backward");
  ::strata::detail::check_defined(op, t, "t");
  ::strata::detail::check_floating(op, t, "t");
  if (grad.defined()) {
    STRATA_CHECK(
        grad.shape() == t.shape() && grad.dtype() == t.dtype() && grad.device() == t.device(), op,
        "grad is ", shape_str(grad.shape()), " ", dtype_name(grad.dtype()), " on ",
        grad.device().str(), " but t is ", shape_str(t.shape()), " ", dtype_name(t.dtype()), " on ",
        t.device().str());
    STRATA_CHECK(!may_overlap(grad, t), op, "grad shares memory with t");
  }
  const bool was_tracked = lookup(t) >= 0;
  const int id = was_tracked ? lookup(t) : track(t);
  Buffer& b = bufs_[static_cast<std::size_t>(id)];
  // The caller's gradient is the buffer itself when t is its whole storage,
  // laid out alike: backward adds straight into it, with no pass at the end.
  const auto isz = static_cast<std::int64_t>(itemsize(t.dtype()));
  if (!was_tracked && grad.defined() && t.is_contiguous() && grad.is_contiguous() &&
      t.offset() == 0 && t.numel() * isz == static_cast<std::int64_t>(t.storage()->nbytes())) {
    b.grad = Tensor::from_storage(grad.storage(), {t.numel()}, {1}, grad.offset(), t.dtype());
    b.shift = grad.offset();
    b.direct = true;
  }
  b.watched = true;
  watches_.push_back(Watch{t, b.direct ? Tensor() : grad, region_of(t, id)});
}

void TapeState::run_node(std::size_t k) {
  Node& n = *nodes_[k];
  const OpOptions& opt = n.opt;
  std::vector<Tensor> gouts(n.outs.size());
  bool any = false;
  for (std::size_t j = 0; j < n.outs.size(); ++j) {
    const Tensor view = grad_region(n.outs[j], false);
    if (!view.defined()) continue;
    any = true;
    if (n.born[j]) {
      gouts[j] = view;  // nothing recorded earlier touches this memory
    } else {
      // What the op overwrote had no further effect: its gradient is zero.
      gouts[j] = view.clone();
      fill_(grad_region(n.outs[j], true, opt), 0.0, opt);
    }
  }
  if (any && n.backward) {
    for (const Saved& s : n.saved)
      STRATA_CHECK(s.id < 0 || bufs_[static_cast<std::size_t>(s.id)].version == s.version, n.op,
                   "a tensor saved for its backward was overwritten in place by a later op; "
                   "write into a clone instead");
    GradContext ctx(*this, n, std::move(gouts));
    if (profile_.on())
      profile_.time(n.op, [&] { n.backward(ctx); });
    else
      n.backward(ctx);
  }
  for (std::size_t j = 0; j < n.outs.size(); ++j) {
    Buffer& b = bufs_[static_cast<std::size_t>(n.outs[j].id)];
    if (n.born[j] && !b.watched && b.outer_id < 0) {  // freed early
      b.grad = Tensor();
      b.written.clear();
      b.borrowed = false;
    }
  }
  nodes_[k].reset();  // frees what the op saved
}

void TapeState::backward(const Tensor& loss, const Tensor& seed, const OpOptions& opt) {
  const char* op = "autograd::Tape::backward";
  STRATA_CHECK(!done_, op, "the tape has already run backward (once per tape)");
  ::strata::detail::check_defined(op, loss, "loss");
  if (seed.defined())
    STRATA_CHECK(seed.shape() == loss.shape() && seed.device() == loss.device(), op, "seed is ",
                 shape_str(seed.shape()), " on ", seed.device().str(), " but loss is ",
                 shape_str(loss.shape()), " on ", loss.device().str());
  pause();
  done_ = true;
  if (profile_requested_) profile_.start(loss.device());
  const int id = lookup(loss);
  STRATA_CHECK(id >= 0, op, "loss does not depend on any watched tensor (nothing recorded it)");
  // The backward's own ops are not recorded, by this tape or any other.
  TapeState* const before = set_recording(nullptr);
  try {
    const Region r = region_of(loss, id);
    if (seed.defined()) {
      if (!borrow_seed(r, seed)) accumulate(r, seed, opt);
    } else {
      accumulate(r, Tensor::full(loss.shape(), 1.0, loss.dtype(), loss.device()), opt);
    }
    for (std::size_t k = nodes_.size(); k-- > 0;) run_node(k);
    for (const Watch& w : watches_) {
      if (!w.user_grad.defined()) continue;
      const Tensor g = grad_region(w.region, false);
      if (g.defined()) add_out(w.user_grad, w.user_grad, g, opt);
    }
    if (outer_ != nullptr) add_into_outer();
  } catch (...) {
    set_recording(before);
    nodes_.clear();
    throw;
  }
  set_recording(before);
  nodes_.clear();
  for (Buffer& b : bufs_) {
    if (b.watched) {
      own(b, opt);  // grad() must not follow the caller's seed
    } else {
      b.grad = Tensor();
      b.written.clear();
      b.borrowed = false;
    }
  }
}

// The loss's gradient is the caller's seed itself where it is laid out as
// the loss's whole memory: read in place, copied only if something would
// write into it (own). Not when the seed is gradient memory the backward
// writes (a watched tensor's gradient).
bool TapeState::borrow_seed(const Region& r, const Tensor& seed) {
  Buffer& b = bufs_.at(static_cast<std::size_t>(r.id));
  if (b.grad.defined() || seed.dtype() != b.dtype || seed.device() != b.device ||
      !seed.is_contiguous() || r.offset != 0)
    return false;
  const Tensor view = Tensor::from_storage(seed.storage(), r.shape, r.strides, seed.offset(),
                                           r.dtype);  // the seed read as the loss's region
  const auto isz = static_cast<std::int64_t>(itemsize(b.dtype));
  if (!view.is_contiguous() || view.numel() * isz != static_cast<std::int64_t>(b.nbytes))
    return false;
  for (const Buffer& o : bufs_)
    if (o.grad.defined() && o.grad.storage() == seed.storage()) return false;
  for (const Watch& w : watches_)
    if (w.user_grad.defined() && w.user_grad.storage() == seed.storage()) return false;
  b.grad = Tensor::from_storage(seed.storage(), {seed.numel()}, {1}, seed.offset(), b.dtype);
  b.shift = seed.offset();
  b.borrowed = true;
  return true;
}

// A checkpoint's recompute: what reached memory the outer tape tracks is
// that tape's gradient too.
void TapeState::add_into_outer() {
  for (Buffer& b : bufs_) {
    if (b.outer_id < 0 || !b.grad.defined()) continue;
    settle(b, OpOptions{});
    const Buffer& ob = outer_->buffer(b.outer_id);
    const std::int64_t n = b.grad.numel();
    const Tensor dst = outer_->grad_region(Region{b.outer_id, {n}, {1}, 0, ob.dtype}, true);
    add_out(dst, dst, b.grad, OpOptions{});
  }
}

Tensor TapeState::grad(const Tensor& t) const {
  const char* op = "autograd::Tape::grad";
  for (const Watch& w : watches_) {
    if (!::strata::detail::same_view(w.t, t)) continue;
    if (w.user_grad.defined()) return w.user_grad;
    auto* self = const_cast<TapeState*>(this);
    const Tensor g = self->grad_region(w.region, false);
    return g.defined() ? g : Tensor::zeros(t.shape(), t.dtype(), t.device());
  }
  ::strata::detail::check_defined(op, t, "t");
  fail(op, "t (", shape_str(t.shape()), ") is not a watched tensor (Tape::watch)");
}

}  // namespace strata::autograd
