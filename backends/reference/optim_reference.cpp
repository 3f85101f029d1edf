// reference adamw_step_ / sgd_step_ and sum_of_squares: a naive loop over every element of
// every tensor of the call, in f64, each value rounded once to its stored
// dtype. The formulas are written here on their own (bias-corrected moments
// m_hat, v_hat and the decay folded into one step), not shared with the
// cpu and cuda kernels, so that a wrong shared formula shows up as a
// mismatch. With a master the param is the master's stored f32 value
// rounded to the param's dtype. A grad_scale multiplies g in f64 and rounds
// the product to the grad's dtype, as the reference mul_out does.
#include <cmath>
#include <cstdint>
#include <string>

#include "strata/dtype.hpp"
#include "strata/optim_args.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

double at(const void* base, DType dt, std::int64_t i) {
  return load_as_double(static_cast<const char*>(base) + i * itemsize(dt), dt);
}
void put(void* base, DType dt, std::int64_t i, double v) {
  store_from_double(static_cast<char*>(base) + i * itemsize(dt), dt, v);
}

// x rounded to dt, as a stored result of that dtype would be.
double rounded(double x, DType dt) {
  alignas(8) unsigned char b[8];
  store_from_double(b, dt, x);
  return load_as_double(b, dt);
}

// The new value of one parameter element; updates its state in place.
double adamw(const OptimStepArgs& a, const OptimTensor& t, std::int64_t i, double p, double g) {
  const double t_ = static_cast<double>(a.step);
  const double m = a.beta1 * at(t.state0, a.state_dtype, i) + (1.0 - a.beta1) * g;
  const double v = a.beta2 * at(t.state1, a.state_dtype, i) + (1.0 - a.beta2) * g * g;
  put(t.state0, a.state_dtype, i, m);
  put(t.state1, a.state_dtype, i, v);
  const double m_hat = m / (1.0 - std::pow(a.beta1, t_));
  const double v_hat = v / (1.0 - std::pow(a.beta2, t_));
  return p - a.lr * (a.weight_decay * p + m_hat / (std::sqrt(v_hat) + a.eps));
}

double sgd(const OptimStepArgs& a, const OptimTensor& t, std::int64_t i, double p, double g) {
  const double d = g + a.weight_decay * p;
  if (a.momentum == 0) return p - a.lr * d;
  const double buf =
      a.first_step ? d : a.momentum * at(t.state0, a.state_dtype, i) + (1.0 - a.dampening) * d;
  put(t.state0, a.state_dtype, i, buf);
  return p - a.lr * (a.nesterov ? d + a.momentum * buf : buf);
}

void optim_step(const OptimStepArgs& a) {
  for (int k = 0; k < a.count; ++k) {
    const OptimTensor& t = a.tensors[k];
    for (std::int64_t i = 0; i < t.numel; ++i) {
      const double p = a.has_master ? at(t.master, DType::f32, i) : at(t.param, a.param_dtype, i);
      double g = at(t.grad, a.grad_dtype, i);
      if (a.grad_scale != 1.0) g = rounded(g * a.grad_scale, a.grad_dtype);
      const double next = a.rule == OptimRule::adamw ? adamw(a, t, i, p, g) : sgd(a, t, i, p, g);
      if (a.has_master) {
        put(t.master, DType::f32, i, next);
        put(t.param, a.param_dtype, i, at(t.master, DType::f32, i));  // the stored master, rounded
      } else {
        put(t.param, a.param_dtype, i, next);
      }
    }
  }
}

// sum_of_squares: every element widened to f64, squared and added in list
// order, one accumulator.
void sum_of_squares(const SumOfSquaresArgs& a) {
  double total = 0.0;
  for (int k = 0; k < a.count; ++k)
    for (std::int64_t i = 0; i < a.tensors[k].numel; ++i) {
      const double x = at(a.tensors[k].data, a.dtype, i);
      total += x * x;
    }
  put(a.out, DType::f64, 0, total);
}

}  // namespace

void register_reference_optim(Registry& r) {
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<SumOfSquaresArgs>("sum_of_squares", "reference", dt,
                                   "reference.optim.sum_of_squares", &sum_of_squares);
  for (const char* op : {"adamw_step_", "sgd_step_"})
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
      r.add_kernel<OptimStepArgs>(op, "reference", dt, std::string("reference.optim.") + op,
                                  &optim_step);
}

}  // namespace strata::reference
