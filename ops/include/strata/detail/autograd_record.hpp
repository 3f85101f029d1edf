#pragma once
// How an op's front end records itself on the tape (strata/autograd.hpp),
// and what its backward sees. A front end calls record() after its kernel
// ran; the tape keeps the op only when an input or output touches memory a
// gradient is wanted for. docs/guide/autograd.md: "Adding an op's backward".
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "strata/autograd.hpp"

namespace strata::autograd {

struct Node;  // ops/src/autograd_tape.cpp

// Given to an op's backward function.
class GradContext {
 public:
  GradContext(TapeState& tape, Node& node, std::vector<Tensor> grad_outs)
      : tape_(tape), node_(node), grad_outs_(std::move(grad_outs)) {}

  // The gradient of output i; undefined when nothing flowed into it.
  const Tensor& grad_out(int i) const { return grad_outs_.at(static_cast<std::size_t>(i)); }
  std::size_t num_outputs() const { return grad_outs_.size(); }
  // True when input i's gradient is wanted (it leads to a watched tensor).
  bool needs(int i) const;
  // Adds g into input i's gradient. g has input i's shape, or broadcasts
  // to it (a sum's gradient), or is larger where the forward broadcast
  // input i (summed back over those dims here); cast to input i's dtype.
  // Input i's first contribution is copied in, not added to zeros; a
  // temporary passed by value (or std::move) that nothing else holds
  // becomes the gradient memory itself, with no copy.
  void accumulate(int i, Tensor g);
  // Input i's gradient as a view to add into directly (matmul with
  // accumulate, beta = 1); undefined when not wanted or when input i is a
  // broadcast view (stride 0), which only accumulate() can reduce into.
  Tensor grad_view(int i);
  // As grad_view, for a kernel that writes a whole contribution in one
  // call: `overwrite` comes back true when no earlier contribution reached
  // the view's elements (the first into its memory, or into a slice apart
  // from the slices written before), which are then left unwritten (not
  // zeroed): write them all (beta = 0). False: add into it.
  Tensor grad_view(int i, bool& overwrite);
  // Input i's contribution made by write(out), an op that fills `out` (of
  // the shape and dtype of the forward's output 0's gradient) whole: into
  // the gradient memory itself when it is unwritten there and of that shape
  // and dtype, else into a temporary that accumulate() adds.
  void produce(int i, const std::function<void(const Tensor& out)>& write);
  // The k-th tensor the op saved, checked not to have been overwritten
  // in place since.
  const Tensor& saved(int k) const;
  // The forward's backend and stream: the backward runs where it ran.
  const OpOptions& options() const;

 private:
  TapeState& tape_;
  Node& node_;
  std::vector<Tensor> grad_outs_;
};

using BackwardFn = std::function<void(GradContext&)>;

namespace detail {

// The tape recording on this thread, or nullptr: what every front end
// tests first, so that nothing else runs when no tape is alive.
inline thread_local TapeState* t_recording_tape = nullptr;
inline TapeState* recording_tape() noexcept { return t_recording_tape; }

// Records `op` when an input or an output touches watched memory. inputs
// may hold undefined tensors (an absent bias); outputs are what the op
// wrote (a fresh tensor or the caller's view). `saved` are the tensors the
// backward reads (through GradContext::saved).
void record(TapeState& tape, const char* op, std::initializer_list<const Tensor*> inputs,
            std::initializer_list<const Tensor*> outputs, std::vector<Tensor> saved,
            BackwardFn backward, const OpOptions& opt);

// For an op without a backward yet: a strata::Error naming it when the tape
// records and an input needs a gradient, rather than a silent zero.
void refuse_gradient(const char* op, std::initializer_list<const Tensor*> inputs);

// Before an `_out` form writes: a strata::Error when `out` is memory a
// recording tape watches (weights change under NoGrad or after backward).
void refuse_write_to_watched(const char* op, const Tensor& out);

}  // namespace detail
}  // namespace strata::autograd
