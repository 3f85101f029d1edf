// SGD, AdamW, gradient clipping and learning-rate schedules (optim.hpp).
// A step goes to the fused multi-tensor ops (optim_fused.cpp) when every
// parameter qualifies, else it is written here with the elementwise ops;
// either way every backend and device runs it as it runs the model. The
// formulas and their order are torch.optim's, so that a step here and a
// step there agree to rounding. 16-bit parameters may have f32 masters:
// the update runs on the master, the parameter gets it rounded.
#include "strata/nn/optim.hpp"

#include <cmath>
#include <initializer_list>
#include <map>
#include <numbers>

#include "optim_common.hpp"
#include "strata/elementwise.hpp"
#include "strata/error.hpp"
#include "strata/optim_ops.hpp"
#include "strata/reduce.hpp"

namespace strata::nn {

namespace {

using detail::state_dtype;

Tensor widen(const Tensor& t, const OpOptions& o) {
  const DType dt = state_dtype(t.dtype());
  return t.dtype() == dt ? t : cast(t, dt, o);
}

// The parameter in the update's precision, and where the result goes back.
struct Working {
  Tensor p;  // p itself, its f32 master, or an f32 copy of a 16-bit p
  Tensor* dst;
  void commit(const OpOptions& o) const {
    if (p.data_ptr() != dst->data_ptr()) copy_(*dst, p, o);  // rounds once
  }
};

Working working(Tensor* p, const Tensor& master, const OpOptions& o) {
  return Working{master.defined() ? master : widen(*p, o), p};
}

// The f32 master of p when it has one (16-bit p, master_weights): made from
// p the first time.
Tensor master_for(const Tensor& p, bool master_weights, const OpOptions& o) {
  if (!master_weights || !detail::is_16bit(p.dtype())) return Tensor();
  return cast(p, DType::f32, o);
}

void check_rate(const char* op, double lr, double grad_scale) {
  check(std::isfinite(lr) && lr >= 0, op, "lr must be finite and >= 0, got ", lr);
  check(std::isfinite(grad_scale) && grad_scale >= 0, op,
        "grad_scale must be finite and >= 0, got ", grad_scale);
}

// g * grad_scale in g's dtype, the value mul_out(g, g, grad_scale) would
// leave in g (the fused ops read it the same way); g itself when 1.
Tensor scaled_grad(const Tensor& g, double grad_scale, const OpOptions& o) {
  return grad_scale == 1.0 ? g : mul(g, grad_scale, o);
}

Tensor zeros_like_state(const Tensor& p) {
  return Tensor::zeros(p.shape(), state_dtype(p.dtype()), p.device());
}

Tensor step_tensor(std::int64_t steps) {
  return Tensor::full({}, static_cast<double>(steps), DType::f64);
}

// "step", then each defined state tensor of every parameter's slot, named
// "<key>.<parameter name>", in slot order and `entries` order.
template <class Slot>
NamedState named_state(std::int64_t steps, const std::vector<Slot>& slots,
                       std::initializer_list<std::pair<const char*, Tensor Slot::*>> entries) {
  NamedState s{{"step", step_tensor(steps)}};
  for (const Slot& sl : slots)
    for (const auto& [key, member] : entries)
      if ((sl.*member).defined()) s.emplace_back(std::string(key) + "." + sl.name, sl.*member);
  return s;
}

// Finds `name` in s with p's state shape and dtype, or strata::Error.
const Tensor& find_state(const char* op, const NamedState& s, const std::string& name,
                         const Tensor& like) {
  for (const auto& [n, t] : s) {
    if (n != name) continue;
    check(t.shape() == like.shape() && t.dtype() == state_dtype(like.dtype()), op, "state '", name,
          "' is ", dtype_name(t.dtype()), " ", shape_str(t.shape()), ", expected ",
          dtype_name(state_dtype(like.dtype())), " ", shape_str(like.shape()));
    return t;
  }
  fail(op, "state '", name, "' is missing");
}

std::int64_t find_steps(const char* op, const NamedState& s) {
  for (const auto& [n, t] : s)
    if (n == "step") {
      check(t.numel() == 1, op, "state 'step' must hold one number");
      const double v = t.item({});
      check(v >= 0 && v == std::floor(v) && v < 9.0e15, op, "state 'step' is ", v);
      return static_cast<std::int64_t>(v);
    }
  fail(op, "state 'step' is missing");
}

}  // namespace

bool decays_by_default(const std::string& name, const Tensor& param) {
  if (param.dim() < 2) return false;  // biases, norms' weights
  for (const char* embedding : {"wte", "wpe", "embed"})
    if (name.find(embedding) != std::string::npos) return false;
  return true;
}

double grad_norm(Module& m, const OpOptions& opt) {
  const autograd::NoGrad pause;
  // One sum_of_squares call per (device, dtype) of the gradients, in a
  // fixed order: a model's gradients share both, so one multi-tensor
  // reduction and one read back per step.
  std::map<std::pair<std::string, int>, std::vector<Tensor>> groups;
  for (const auto& [name, g] : m.named_gradients()) {
    if (g.numel() == 0) continue;
    groups[{g.device().str(), static_cast<int>(g.dtype())}].push_back(g.contiguous());
  }
  double total = 0.0;
  for (const auto& [key, list] : groups) total += sum_of_squares(list, opt).item({});
  return std::sqrt(total);
}

double clip_coefficient(double norm, double max_norm) {
  check(std::isfinite(max_norm) && max_norm > 0, "clip_grad_norm",
        "max_norm must be finite and > 0, got ", max_norm);
  if (!std::isfinite(norm) || norm <= max_norm) return 1.0;
  return max_norm / (norm + 1e-6);  // torch.nn.utils.clip_grad_norm_
}

double clip_grad_norm(Module& m, double max_norm, const OpOptions& opt) {
  clip_coefficient(0.0, max_norm);  // max_norm checked before any work
  const double norm = grad_norm(m, opt);
  const double coef = clip_coefficient(norm, max_norm);
  if (coef == 1.0) return norm;
  const autograd::NoGrad pause;
  for (const auto& [name, g] : m.named_gradients()) mul_out(g, g, coef, opt);
  return norm;
}

double LrSchedule::at(std::int64_t step) const {
  check(step >= 0, "LrSchedule", "step must be >= 0, got ", step);
  if (warmup > 0 && step < warmup)
    return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (kind == Kind::constant) return lr;
  if (step >= total_steps) return min_lr;
  const double span = static_cast<double>(std::max<std::int64_t>(1, total_steps - warmup));
  const double progress = static_cast<double>(step - warmup) / span;
  return min_lr + 0.5 * (1.0 + std::cos(std::numbers::pi * progress)) * (lr - min_lr);
}

// ---- SGD ----------------------------------------------------------------------------------

SGD::SGD(Module& m, SGDOptions o) : m_(&m), o_(std::move(o)) {
  const char* op = "SGD";
  check(o_.momentum >= 0 && std::isfinite(o_.momentum), op, "momentum must be >= 0, got ",
        o_.momentum);
  check(std::isfinite(o_.dampening), op, "dampening must be finite, got ", o_.dampening);
  check(o_.weight_decay >= 0 && std::isfinite(o_.weight_decay), op,
        "weight_decay must be >= 0, got ", o_.weight_decay);
  check(!o_.nesterov || (o_.momentum > 0 && o_.dampening == 0), op,
        "nesterov needs momentum > 0 and dampening 0 (torch.optim.SGD's rule)");
}

void SGD::step(double lr, double grad_scale) {
  check_rate("SGD::step", lr, grad_scale);
  const autograd::NoGrad pause;
  const OpOptions& o = o_.op;
  const auto params = m_->named_parameters();
  const auto grads = m_->named_gradients();
  if (slots_.empty())
    for (const auto& [name, p] : params) slots_.push_back(Slot{name, Tensor(), Tensor()});
  check(slots_.size() == params.size(), "SGD::step", "the module has ", params.size(),
        " parameters but the optimizer was made for ", slots_.size());
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!slots_[i].master.defined())
      slots_[i].master = master_for(*params[i].second, o_.master_weights, o);
  if (o_.fused && detail::fusable(params, grads)) {
    fused_step(params, grads, lr, grad_scale);
    ++steps_;
    return;
  }
  const bool with_momentum = o_.momentum != 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    const Working w = working(p, slots_[i].master, o);
    Tensor d = widen(scaled_grad(grads[i].second, grad_scale, o), o);
    if (o_.weight_decay != 0 && o_.decay(name, *p)) d = add(d, mul(w.p, o_.weight_decay, o), o);
    if (with_momentum) {
      Tensor& buf = slots_[i].buf;
      if (!buf.defined()) {
        buf = d.clone();  // torch: the first step's buffer is the gradient itself
      } else {
        mul_out(buf, buf, o_.momentum, o);
        add_out(buf, buf, mul(d, 1.0 - o_.dampening, o), o);
      }
      d = o_.nesterov ? add(d, mul(buf, o_.momentum, o), o) : buf;
    }
    sub_out(w.p, w.p, mul(d, lr, o), o);
    w.commit(o);
  }
  ++steps_;
}

NamedState SGD::state() {
  return named_state(steps_, slots_, {{"momentum_buffer", &Slot::buf}, {"master", &Slot::master}});
}

void SGD::load_state(const NamedState& s) {
  const char* op = "SGD::load_state";
  const std::int64_t steps = find_steps(op, s);
  std::vector<Slot> loaded;
  for (const auto& [name, p] : m_->named_parameters()) {
    Slot sl{name, Tensor(), Tensor()};
    if (o_.momentum != 0 && steps > 0)
      sl.buf = find_state(op, s, "momentum_buffer." + name, *p).to(p->device()).clone();
    if (steps > 0 && o_.master_weights && detail::is_16bit(p->dtype()))
      sl.master = find_state(op, s, "master." + name, *p).to(p->device()).clone();
    loaded.push_back(std::move(sl));
  }
  slots_ = std::move(loaded);  // nothing changed until every entry was found
  steps_ = steps;
}

// ---- AdamW --------------------------------------------------------------------------------

AdamW::AdamW(Module& m, AdamWOptions o) : m_(&m), o_(std::move(o)) {
  const char* op = "AdamW";
  check(o_.beta1 >= 0 && o_.beta1 < 1, op, "beta1 must be in [0, 1), got ", o_.beta1);
  check(o_.beta2 >= 0 && o_.beta2 < 1, op, "beta2 must be in [0, 1), got ", o_.beta2);
  check(o_.eps >= 0 && std::isfinite(o_.eps), op, "eps must be >= 0, got ", o_.eps);
  check(o_.weight_decay >= 0 && std::isfinite(o_.weight_decay), op,
        "weight_decay must be >= 0, got ", o_.weight_decay);
}

void AdamW::step(double lr, double grad_scale) {
  check_rate("AdamW::step", lr, grad_scale);
  const autograd::NoGrad pause;
  const OpOptions& o = o_.op;
  const auto params = m_->named_parameters();
  const auto grads = m_->named_gradients();
  if (moments_.empty())
    for (const auto& [name, p] : params)
      moments_.push_back(Moments{name, zeros_like_state(*p), zeros_like_state(*p), Tensor()});
  check(moments_.size() == params.size(), "AdamW::step", "the module has ", params.size(),
        " parameters but the optimizer was made for ", moments_.size());
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!moments_[i].master.defined())
      moments_[i].master = master_for(*params[i].second, o_.master_weights, o);
  if (o_.fused && detail::fusable(params, grads)) {
    fused_step(params, grads, lr, grad_scale);
    ++steps_;
    return;
  }
  const double t = static_cast<double>(steps_ + 1);
  const double bc1 = 1.0 - std::pow(o_.beta1, t), bc2 = 1.0 - std::pow(o_.beta2, t);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& [name, p] = params[i];
    Moments& mo = moments_[i];
    const Working w = working(p, mo.master, o);
    const Tensor g = widen(scaled_grad(grads[i].second, grad_scale, o), o);
    if (o_.weight_decay != 0 && o_.decay(name, *p))
      mul_out(w.p, w.p, 1.0 - lr * o_.weight_decay, o);
    // exp_avg = beta1 exp_avg + (1 - beta1) g; exp_avg_sq = beta2 exp_avg_sq + (1 - beta2) g^2
    mul_out(mo.exp_avg, mo.exp_avg, o_.beta1, o);
    add_out(mo.exp_avg, mo.exp_avg, mul(g, 1.0 - o_.beta1, o), o);
    mul_out(mo.exp_avg_sq, mo.exp_avg_sq, o_.beta2, o);
    add_out(mo.exp_avg_sq, mo.exp_avg_sq, mul(mul(g, g, o), 1.0 - o_.beta2, o), o);
    // p -= lr / bc1 * exp_avg / (sqrt(exp_avg_sq) / sqrt(bc2) + eps)
    const Tensor denom = add(mul(sqrt(mo.exp_avg_sq, o), 1.0 / std::sqrt(bc2), o), o_.eps, o);
    sub_out(w.p, w.p, mul(div(mo.exp_avg, denom, o), lr / bc1, o), o);
    w.commit(o);
  }
  ++steps_;
}

NamedState AdamW::state() {
  return named_state(steps_, moments_,
                     {{"exp_avg", &Moments::exp_avg},
                      {"exp_avg_sq", &Moments::exp_avg_sq},
                      {"master", &Moments::master}});
}

void AdamW::load_state(const NamedState& s) {
  const char* op = "AdamW::load_state";
  const std::int64_t steps = find_steps(op, s);
  std::vector<Moments> loaded;
  for (const auto& [name, p] : m_->named_parameters()) {
    Moments mo{name, zeros_like_state(*p), zeros_like_state(*p), Tensor()};
    if (steps > 0) {
      mo.exp_avg = find_state(op, s, "exp_avg." + name, *p).to(p->device()).clone();
      mo.exp_avg_sq = find_state(op, s, "exp_avg_sq." + name, *p).to(p->device()).clone();
      if (o_.master_weights && detail::is_16bit(p->dtype()))
        mo.master = find_state(op, s, "master." + name, *p).to(p->device()).clone();
    }
    loaded.push_back(std::move(mo));
  }
  moments_ = std::move(loaded);  // nothing changed until every entry was found
  steps_ = steps;
}

}  // namespace strata::nn
