#pragma once
// Optimizers over a Module's parameters and the gradients it keeps
// (Module::grad), with PyTorch's semantics: SGD (momentum, dampening,
// Nesterov, L2 weight decay) as torch.optim.SGD, AdamW (decoupled weight
// decay, bias correction, eps added to sqrt(v_hat)) as torch.optim.AdamW;
// gradient clipping by global norm as torch.nn.utils.clip_grad_norm_;
// learning-rate schedules (constant, linear warm-up then cosine decay, as
// nanoGPT). docs/guide/training.md.
//
// The update runs under autograd::NoGrad as the fused multi-tensor ops
// adamw_step_ / sgd_step_ (strata/optim_ops.hpp: a few launches for all the
// parameters) when every parameter and gradient qualifies (contiguous, one
// device, floating), else as a handful of elementwise ops per parameter;
// both give torch.optim's update. Optimizer state is f32 for 16-bit
// parameters (f64 for f64 ones). Mixed precision: a 16-bit parameter has an
// f32 master copy (master_weights, on by default) that the update runs on,
// the parameter receiving the master rounded once per step; the master is
// part of state(). docs/guide/training.md.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "strata/nn/module.hpp"
#include "strata/op_options.hpp"

namespace strata::nn {

// Whether weight decay applies to a parameter. The default decays matrices
// (dim >= 2) except embedding tables ("wte", "wpe", "embed"): norms, biases
// and embeddings are not decayed.
using DecayRule = std::function<bool(const std::string& name, const Tensor& param)>;
bool decays_by_default(const std::string& name, const Tensor& param);

// Scales every gradient of m by max_norm / (norm + 1e-6) when the global L2
// norm of all of them exceeds max_norm; returns that norm (before clipping),
// in f64. max_norm > 0 (finite) or strata::Error. A non-finite norm is
// returned as it is and nothing is scaled: the caller decides (stop, skip).
double clip_grad_norm(Module& m, double max_norm, const OpOptions& opt = {});
// The global L2 norm of m's gradients, in f64: one sum_of_squares
// (strata/optim_ops.hpp) over all of them and one read back.
double grad_norm(Module& m, const OpOptions& opt = {});
// The factor clip_grad_norm scales the gradients by for a global norm
// `norm`: max_norm / (norm + 1e-6) when norm > max_norm, else 1 (also for a
// non-finite norm). The training loop hands it to Optimizer::step as
// grad_scale instead of scaling the gradients in a pass of their own.
double clip_coefficient(double norm, double max_norm);

struct LrSchedule {
  enum class Kind { constant, cosine };
  Kind kind = Kind::constant;
  double lr = 1e-3;
  double min_lr = 0.0;           // cosine: the rate at total_steps
  std::int64_t warmup = 0;       // steps of linear warm-up: lr (s + 1) / warmup at step s
  std::int64_t total_steps = 0;  // cosine: the step where it reaches min_lr
  // The rate at `step` (0-based). Past total_steps a cosine stays at min_lr.
  double at(std::int64_t step) const;
};

// A name -> tensor list of what an optimizer keeps (for checkpoints):
// "<state>.<parameter name>" (exp_avg, exp_avg_sq, momentum_buffer, and
// master for the f32 master of a 16-bit parameter), plus "step" as a 0-d
// f64 tensor.
using NamedState = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter that has a gradient, at rate lr, each
  // gradient read as g * grad_scale rounded to its dtype (the value
  // mul_out(g, g, grad_scale) would leave; the gradients are not written):
  // clipping's coefficient applied inside the update.
  virtual void step(double lr, double grad_scale = 1.0) = 0;
  // Updates done so far.
  std::int64_t steps() const { return steps_; }
  // The state, named (views of the optimizer's own tensors: copy to save).
  virtual NamedState state() = 0;
  // Loads a state saved from an optimizer of the same kind over the same
  // parameters; every name and shape checked before anything is written.
  virtual void load_state(const NamedState& s) = 0;

 protected:
  std::int64_t steps_ = 0;
};

struct SGDOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;  // L2: g += weight_decay * p (torch.optim.SGD)
  bool nesterov = false;      // needs momentum > 0 and dampening 0
  DecayRule decay = decays_by_default;
  bool master_weights = true;  // f16/bf16 parameters: update an f32 master, round into p
  bool fused = true;           // false: always the per-op update (for comparison)
  OpOptions op;                // backend and stream of the update's ops
};

class SGD : public Optimizer {
 public:
  SGD(Module& m, SGDOptions o = {});
  void step(double lr, double grad_scale = 1.0) override;
  NamedState state() override;
  void load_state(const NamedState& s) override;

 private:
  Module* m_;
  SGDOptions o_;
  // Per parameter: (name, momentum buffer, f32 master), made on the first
  // step (the buffer only with momentum, the master only for a 16-bit
  // parameter with master_weights).
  struct Slot {
    std::string name;
    Tensor buf, master;
  };
  std::vector<Slot> slots_;
  void fused_step(const std::vector<std::pair<std::string, Tensor*>>& params,
                  const std::vector<std::pair<std::string, Tensor>>& grads, double lr,
                  double grad_scale);
};

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled: p *= 1 - lr weight_decay
  DecayRule decay = decays_by_default;
  bool master_weights = true;  // f16/bf16 parameters: update an f32 master, round into p
  bool fused = true;           // false: always the per-op update (for comparison)
  OpOptions op;
};

class AdamW : public Optimizer {
 public:
  AdamW(Module& m, AdamWOptions o = {});
  void step(double lr, double grad_scale = 1.0) override;
  NamedState state() override;
  void load_state(const NamedState& s) override;

 private:
  Module* m_;
  AdamWOptions o_;
  // Per parameter: (name, exp_avg, exp_avg_sq, f32 master or none), made
  // on the first step.
  struct Moments {
    std::string name;
    Tensor exp_avg, exp_avg_sq, master;
  };
  std::vector<Moments> moments_;
  void fused_step(const std::vector<std::pair<std::string, Tensor*>>& params,
                  const std::vector<std::pair<std::string, Tensor>>& grads, double lr,
                  double grad_scale);
};

}  // namespace strata::nn
