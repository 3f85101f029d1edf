#pragma once
// The per-element maths of the fused optimizer updates (adamw_step_,
// sgd_step_), once, for the cpu and cuda kernels (the reference keeps its
// own f64 formulas). C is the compute type: double for f64 params, float
// otherwise. The order of operations is that of the update nn::AdamW and
// nn::SGD write with the ops (and torch.optim's), so the fused and the
// per-op paths agree to rounding.
#include <cmath>

#include "common/elementwise_functors.hpp"
#include "strata/optim_args.hpp"

namespace strata::fn {

// Everything an update needs per element, in C, made once per call on the
// host.
template <class C>
struct OptimCoef {
  // AdamW
  C beta1, one_minus_beta1, beta2, one_minus_beta2;
  C decay;         // 1 - lr weight_decay
  C step_size;     // lr / (1 - beta1^t)
  C inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  C eps;
  // SGD
  C lr, weight_decay, momentum, one_minus_dampening;
  C grad_scale;  // applied by the kernels, each rounding as a separate mul would
  bool adamw, with_momentum, nesterov, first_step, scale_grad;
};

template <class C>
inline OptimCoef<C> optim_coef(const OptimStepArgs& a) {
  const double t = static_cast<double>(a.step);
  const double bc1 = 1.0 - std::pow(a.beta1, t), bc2 = 1.0 - std::pow(a.beta2, t);
  OptimCoef<C> k{};
  k.beta1 = static_cast<C>(a.beta1);
  k.one_minus_beta1 = static_cast<C>(1.0 - a.beta1);
  k.beta2 = static_cast<C>(a.beta2);
  k.one_minus_beta2 = static_cast<C>(1.0 - a.beta2);
  k.decay = static_cast<C>(1.0 - a.lr * a.weight_decay);
  k.step_size = static_cast<C>(a.lr / bc1);
  k.inv_sqrt_bc2 = static_cast<C>(1.0 / std::sqrt(bc2));
  k.eps = static_cast<C>(a.eps);
  k.lr = static_cast<C>(a.lr);
  k.weight_decay = static_cast<C>(a.weight_decay);
  k.momentum = static_cast<C>(a.momentum);
  k.one_minus_dampening = static_cast<C>(1.0 - a.dampening);
  k.adamw = a.rule == OptimRule::adamw;
  k.with_momentum = a.momentum != 0;
  k.nesterov = a.nesterov;
  k.first_step = a.first_step;
  k.grad_scale = static_cast<C>(a.grad_scale);
  k.scale_grad = a.grad_scale != 1.0;
  return k;
}

// torch.optim.AdamW on one element: returns the new p, updates m and v.
template <class C>
STRATA_HD C adamw_update(C p, C g, C& m, C& v, const OptimCoef<C>& k) {
  p = p * k.decay;  // decoupled weight decay (1 when there is none)
  m = m * k.beta1 + g * k.one_minus_beta1;
  v = v * k.beta2 + (g * g) * k.one_minus_beta2;
  const C denom = m_sqrt(v) * k.inv_sqrt_bc2 + k.eps;
  return p - (m / denom) * k.step_size;
}

// torch.optim.SGD on one element: returns the new p, updates buf (read only
// with momentum, and not read on the first step).
template <class C>
STRATA_HD C sgd_update(C p, C g, C& buf, const OptimCoef<C>& k) {
  C d = k.weight_decay != C(0) ? g + p * k.weight_decay : g;  // L2 decay into the gradient
  if (k.with_momentum) {
    buf = k.first_step ? d : buf * k.momentum + d * k.one_minus_dampening;
    d = k.nesterov ? d + buf * k.momentum : buf;
  }
  return p - d * k.lr;
}

}  // namespace strata::fn
