#pragma once
// Internal to ops/src/autograd_*.cpp: the tape's state. Gradients live per
// tracked storage (a Buffer): the gradient of any view is the same view of
// its storage's gradient buffer, so views, aliases and in-place writes
// need no special cases. docs/guide/autograd.md explains the rules.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "autograd_profile.hpp"
#include "strata/autograd.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/detail/copy_observer.hpp"

namespace strata::autograd {

// A view of tracked memory, without holding the memory alive.
struct Region {
  int id = -1;  // Buffer index; -1: no gradient flows here
  Shape shape, strides;
  std::int64_t offset = 0;
  DType dtype = DType::f32;
};

struct Saved {
  Tensor t;
  int id = -1;
  std::uint64_t version = 0;
};

struct Node {
  const char* op = "";
  std::vector<Region> ins, outs;
  std::vector<char> born;  // per output: its storage was first tracked here
  std::vector<Saved> saved;
  BackwardFn backward;  // null: the op only overwrote tracked memory
  OpOptions opt;
};

struct Buffer {
  std::weak_ptr<Storage> storage;  // the forward memory (to notice a freed one)
  Device device;
  std::size_t nbytes = 0;
  DType dtype = DType::f32;
  std::uint64_t version = 0;  // in-place writes recorded so far
  bool watched = false;       // kept after backward (grad())
  bool direct = false;        // `grad` is the caller's gradient tensor itself
  bool borrowed = false;      // `grad` is the caller's seed: copied before any write
  int outer_id = -1;          // a checkpoint's recompute: the outer tape's buffer
  Tensor grad;                // 1-D over the gradient's storage; undefined until needed
  std::int64_t shift = 0;     // grad's element of the forward storage's element 0
  // While not empty: `grad` was allocated unwritten and only these regions,
  // pairwise disjoint, have been written (first contributions to separate
  // slices, as a fused QKV's q, k and v); the rest is zeroed before the
  // gradient is read or added to (TapeState::settle).
  std::vector<Region> written;
};

struct Watch {
  Tensor t;          // the watched view
  Tensor user_grad;  // the caller's gradient, or undefined
  Region region;
};

class TapeState final : public ::strata::detail::CopyObserver {
 public:
  explicit TapeState(TapeState* outer = nullptr);
  ~TapeState();

  void start();  // becomes this thread's recording tape
  void pause();  // stops recording; restores what recorded before
  bool recording() const { return recording_; }

  void watch(const Tensor& t, const Tensor& grad);
  void backward(const Tensor& loss, const Tensor& seed, const OpOptions& opt);
  Tensor grad(const Tensor& t) const;
  void profile_backward() { profile_requested_ = true; }
  std::vector<OpTime> backward_profile() const { return profile_.report(); }

  void record(const char* op, std::initializer_list<const Tensor*> inputs,
              std::initializer_list<const Tensor*> outputs, std::vector<Tensor> saved,
              BackwardFn backward, const OpOptions& opt);
  void copied(const Tensor& dst, const Tensor& src) override;

  // The buffer id of t's storage, or -1 when it is not tracked.
  int lookup(const Tensor& t);
  // t's gradient view. With `allocate` (the caller writes into it): a borrowed
  // buffer is copied first, and an unset one allocated, zeroed by fill_
  // with opt; or, when `fresh` is given and no earlier contribution reached
  // r's elements (r the first region of an unset buffer, or provably
  // disjoint from every region written since it was allocated unwritten),
  // left unwritten and *fresh set, for a first contribution that overwrites
  // all of r (beta = 0).
  Tensor grad_region(const Region& r, bool allocate, const OpOptions& opt = {},
                     bool* fresh = nullptr);
  Region region_of(const Tensor& t, int id) const;
  // Adds g into r's gradient. A first contribution covering the whole
  // buffer is copied into it rather than added to zeros, or, when g is a
  // temporary nothing else holds (passed by std::move), becomes it.
  void accumulate(const Region& r, Tensor g, const OpOptions& opt);
  const Buffer& buffer(int id) const { return bufs_.at(static_cast<std::size_t>(id)); }

 private:
  int track(const Tensor& t);
  void own(Buffer& b, const OpOptions& opt);     // a borrowed gradient becomes the tape's
  void settle(Buffer& b, const OpOptions& opt);  // zeroes what no written region covers
  bool adopt(Buffer& b, const Region& r, const Tensor& g);
  bool borrow_seed(const Region& r, const Tensor& seed);
  void run_node(std::size_t k);
  void add_into_outer();

  TapeState* outer_;  // the tape a checkpoint recomputes for, or null
  std::unordered_map<const Storage*, int> ids_;
  std::vector<Buffer> bufs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Watch> watches_;
  bool recording_ = false, done_ = false, profile_requested_ = false;
  BackwardProfile profile_;
  TapeState* prev_tape_ = nullptr;
  ::strata::detail::CopyObserver* prev_observer_ = nullptr;
};

// Installs `t` (nullptr: none) as this thread's recording tape and copy
// observer; returns the tape it replaces.
TapeState* set_recording(TapeState* t) noexcept;

}  // namespace strata::autograd
