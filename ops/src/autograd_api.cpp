// The public face of autograd (strata/autograd.hpp) and what front ends
// call (strata/detail/autograd_record.hpp), over the tape's state.
#include "autograd_state.hpp"
#include "strata/detail/op_checks.hpp"

namespace strata::autograd {

Tape::Tape() : state_(std::make_unique<TapeState>()) { state_->start(); }
Tape::~Tape() = default;
void Tape::watch(const Tensor& t, const Tensor& grad) { state_->watch(t, grad); }
void Tape::backward(const Tensor& loss, const Tensor& seed, const OpOptions& opt) {
  state_->backward(loss, seed, opt);
}
Tensor Tape::grad(const Tensor& t) const { return state_->grad(t); }
bool Tape::recording() const { return state_->recording(); }
void Tape::profile_backward() { state_->profile_backward(); }
std::vector<OpTime> Tape::backward_profile() const { return state_->backward_profile(); }

bool recording() noexcept { return detail::recording_tape() != nullptr; }

NoGrad::NoGrad() : paused_(set_recording(nullptr)) {}
NoGrad::~NoGrad() { set_recording(paused_); }

Tensor detach(const Tensor& t) {
  ::strata::detail::check_defined("autograd::detach", t, "t");
  // Another Storage object over the same bytes, keeping the original alive:
  // the tape tracks storages, so this one is a stranger to it.
  const std::shared_ptr<Storage>& s = t.storage();
  auto alias = Storage::wrap(s->data(), s->nbytes(), s->device(), s);
  return Tensor::from_storage(std::move(alias), t.shape(), t.strides(), t.offset(), t.dtype());
}

Tensor checkpoint(const BlockFn& fn, const std::vector<Tensor>& inputs) {
  TapeState* const outer = detail::recording_tape();
  if (outer == nullptr) return fn(inputs);
  Tensor out;
  {
    const NoGrad no_grad;
    out = fn(inputs);
  }
  STRATA_CHECK(out.defined(), "autograd::checkpoint", "the block returned an undefined tensor");
  // The node reads every input; its backward recomputes the block on a tape
  // of its own that hands what reaches the outer tape's memory back to it.
  std::vector<const Tensor*> ins;
  for (const Tensor& t : inputs) ins.push_back(&t);
  BackwardFn backward = [fn, inputs, outer](GradContext& ctx) {
    TapeState inner(outer);
    inner.start();
    const Tensor again = fn(inputs);
    inner.backward(again, ctx.grad_out(0), ctx.options());
  };
  // record() takes an initializer_list; a block's inputs are few.
  switch (ins.size()) {
    case 0:
      fail("autograd::checkpoint", "the block takes no inputs; nothing to recompute from");
    case 1:
      outer->record("checkpoint", {ins[0]}, {&out}, inputs, std::move(backward), {});
      break;
    case 2:
      outer->record("checkpoint", {ins[0], ins[1]}, {&out}, inputs, std::move(backward), {});
      break;
    case 3:
      outer->record("checkpoint", {ins[0], ins[1], ins[2]}, {&out}, inputs, std::move(backward),
                    {});
      break;
    default:
      fail("autograd::checkpoint", "the block takes ", ins.size(),
           " inputs; at most 3 (pass the rest as captured tensors)");
  }
  return out;
}

bool GradContext::needs(int i) const { return node_.ins.at(static_cast<std::size_t>(i)).id >= 0; }

void GradContext::accumulate(int i, Tensor g) {
  tape_.accumulate(node_.ins.at(static_cast<std::size_t>(i)), std::move(g), node_.opt);
}

namespace {

// Input r's gradient memory to write into; undefined for a broadcast view.
Tensor writable(TapeState& tape, const Region& r, const OpOptions& opt, bool* overwrite) {
  if (r.id < 0) return {};
  for (std::int64_t s : r.strides)
    if (s == 0) return {};
  return tape.grad_region(r, true, opt, overwrite);
}

}  // namespace

Tensor GradContext::grad_view(int i) {
  return writable(tape_, node_.ins.at(static_cast<std::size_t>(i)), node_.opt, nullptr);
}

Tensor GradContext::grad_view(int i, bool& overwrite) {
  overwrite = false;
  return writable(tape_, node_.ins.at(static_cast<std::size_t>(i)), node_.opt, &overwrite);
}

void GradContext::produce(int i, const std::function<void(const Tensor& out)>& write) {
  const Tensor& g = grad_out(0);
  // Asked only where the write fits: a view handed out as unwritten must be
  // written whole.
  const Region& r = node_.ins.at(static_cast<std::size_t>(i));
  if (r.shape == g.shape() && r.dtype == g.dtype()) {
    bool overwrite = false;
    const Tensor into = grad_view(i, overwrite);
    if (into.defined() && overwrite) {
      write(into);
      return;
    }
  }
  Tensor t = Tensor::empty(g.shape(), g.dtype(), g.device());
  write(t);
  accumulate(i, std::move(t));
}

const Tensor& GradContext::saved(int k) const {
  return node_.saved.at(static_cast<std::size_t>(k)).t;
}

const OpOptions& GradContext::options() const { return node_.opt; }

namespace detail {

void record(TapeState& tape, const char* op, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<const Tensor*> outputs, std::vector<Tensor> saved,
            BackwardFn backward, const OpOptions& opt) {
  tape.record(op, inputs, outputs, std::move(saved), std::move(backward), opt);
}

void refuse_gradient(const char* op, std::initializer_list<const Tensor*> inputs) {
  TapeState* tape = recording_tape();
  if (tape == nullptr) return;
  for (const Tensor* t : inputs)
    STRATA_CHECK(tape->lookup(*t) < 0, op,
                 "has no backward yet, and an input depends on a watched tensor; run it under "
                 "autograd::NoGrad or on detach()ed inputs");
}

void refuse_write_to_watched(const char* op, const Tensor& out) {
  TapeState* tape = recording_tape();
  if (tape == nullptr) return;
  const int id = tape->lookup(out);
  STRATA_CHECK(id < 0 || !tape->buffer(id).watched, op,
               "writes into a watched tensor while the tape records; update weights under "
               "autograd::NoGrad or after backward()");
}

}  // namespace detail
}  // namespace strata::autograd
