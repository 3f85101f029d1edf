#pragma once
// Reverse-mode automatic differentiation: a tape that the ops record while
// it is alive, as TensorFlow's GradientTape. The forward is written with the
// ops a user already calls, on any strided views; docs/guide/autograd.md
// explains the design and shows a whole example.
//
//   autograd::Tape tape;           // this thread's ops record from here
//   tape.watch(w);                 // gradients wanted for w
//   Tensor loss = mean(mul(linear(x, w, {}), y), 0);
//   tape.backward(loss);           // recording stops; gradients flow
//   Tensor dw = tape.grad(w);
//
// Gradients are kept per piece of memory, not per tensor object: the
// gradient of a view is the same view of its storage's gradient. So a
// slice of a fused QKV weight sends its gradient into the fused weight, a
// tensor used twice accumulates, and an op that overwrites memory (copy_,
// an `_out` form, Tensor::copy_from) hands the gradient of what it wrote to
// its inputs and zeroes it for what was there before.
//
// With no tape alive nothing is recorded: an op pays one thread-local load.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata::autograd {

class TapeState;  // ops/src/autograd_tape.cpp

// One op's share of a profiled backward (Tape::profile_backward).
struct OpTime {
  std::string op;
  double ms = 0;  // summed over its nodes
  std::int64_t calls = 0;
};

class Tape {
 public:
  // Starts recording this thread's ops. Tapes nest: a tape made while
  // another records takes over until it is destroyed or has run backward.
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // Asks for the gradient of `t` (any view; its whole storage is watched).
  // With `grad` given (same shape, dtype and device as t), backward() adds
  // the gradient into it (gradient accumulation: zero it yourself between
  // steps); else the tape keeps it, read with grad(t).
  void watch(const Tensor& t, const Tensor& grad = {});

  // Stops recording and sends d(loss)/d(loss) = seed (ones when undefined;
  // else loss's shape) back through every recorded op, freeing what each op
  // saved as soon as its backward has run. Once per tape. `opt` picks the
  // backend of the gradient's seed and of the sums into watched gradients.
  void backward(const Tensor& loss, const Tensor& seed = {}, const OpOptions& opt = {});

  // The gradient of a watched tensor after backward(): the tensor given to
  // watch(), or a tape-owned one (zeros when nothing reached it).
  Tensor grad(const Tensor& t) const;

  // True while this tape records this thread's ops.
  bool recording() const;

  // Called before backward(): each recorded op's backward is timed between
  // two synchronisations of the loss's device and summed by op name, read
  // after backward() with backward_profile() (most time first). The syncs
  // stall the device, so a profiled backward runs slower: it shows where
  // the time goes (bench_train's phases use it).
  void profile_backward();
  std::vector<OpTime> backward_profile() const;

 private:
  std::unique_ptr<TapeState> state_;
};

// Pauses recording on this thread while alive (inference inside a
// training step, the update of the weights).
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  TapeState* paused_;
};

// True while a tape records this thread's ops (not under NoGrad): what a
// module asks to choose between its inference path (buffers reused in
// place) and its training path (every op recorded, fresh outputs).
bool recording() noexcept;

// The same memory, seen as a tensor no gradient flows through (PyTorch's
// detach): no copy; writes through either are seen by both.
Tensor detach(const Tensor& t);

// Gradient checkpointing of a block: runs fn(inputs) without keeping its
// intermediate activations, and runs it again during backward to get them.
// fn must compute the same values both times (no fresh randomness); it may
// read tensors it captures (a block's weights), whose gradients flow as
// usual. Without a recording tape it is just fn(inputs).
using BlockFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;
Tensor checkpoint(const BlockFn& fn, const std::vector<Tensor>& inputs);

}  // namespace strata::autograd
