#include "strata/nn/layers.hpp"

#include "strata/detail/autograd_record.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/norm.hpp"

namespace strata::nn {

Shape with_last(const Shape& s, std::int64_t n) {
  Shape out = s;
  out.back() = n;
  return out;
}

Activation parse_activation(const std::string& name) {
  if (name == "silu" || name == "swish") return Activation::silu;
  if (name == "gelu") return Activation::gelu;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_tanh")
    return Activation::gelu_tanh;
  fail("nn::parse_activation", "unknown activation \"", name,
       "\" (expected silu, gelu, gelu_new or gelu_pytorch_tanh)");
}

void activation_out(Activation a, const Tensor& out, const Tensor& x, const OpOptions& opt) {
  switch (a) {
    case Activation::silu:
      silu_out(out, x, opt);
      return;
    case Activation::gelu:
      gelu_out(out, x, opt);
      return;
    case Activation::gelu_tanh:
      gelu_tanh_out(out, x, opt);
      return;
  }
}

// ---- Linear ---------------------------------------------------------------------
Linear::Linear(std::int64_t in, std::int64_t out, bool has_bias, DType dt, Device dev)
    : weight(Tensor::zeros({out, in}, dt, dev)) {
  if (has_bias) bias = Tensor::zeros({out}, dt, dev);
}

Tensor Linear::forward(const Tensor& x, const MatmulOptions& opt) const {
  return linear(x, weight, bias, opt);
}

void Linear::forward_out(const Tensor& y, const Tensor& x, const MatmulOptions& opt) const {
  linear_out(y, x, weight, bias, opt);
}

void Linear::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  fn(join_name(prefix, "weight"), weight);
  if (bias.defined()) fn(join_name(prefix, "bias"), bias);
}

// ---- Embedding ------------------------------------------------------------------
Embedding::Embedding(std::int64_t num, std::int64_t dim, DType dt, Device dev)
    : weight(Tensor::zeros({num, dim}, dt, dev)) {}

Tensor Embedding::forward(const Tensor& ids, const OpOptions& opt) const {
  return embedding(ids, weight, opt);
}

void Embedding::forward_out(const Tensor& out, const Tensor& ids, const OpOptions& opt) const {
  embedding_out(out, ids, weight, opt);
}

void Embedding::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  fn(join_name(prefix, "weight"), weight);
}

// ---- LayerNorm ------------------------------------------------------------------
LayerNorm::LayerNorm(std::int64_t dim, double eps_, bool has_bias, DType dt, Device dev)
    : weight(Tensor::full({dim}, 1.0, dt, dev)), eps(eps_) {
  if (has_bias) bias = Tensor::zeros({dim}, dt, dev);
}

Tensor LayerNorm::forward(const Tensor& x, const OpOptions& opt) const {
  return layer_norm(x, weight, bias, eps, opt);
}

void LayerNorm::forward_out(const Tensor& out, const Tensor& x, const OpOptions& opt) const {
  layer_norm_out(out, x, weight, bias, eps, opt);
}

void LayerNorm::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  fn(join_name(prefix, "weight"), weight);
  if (bias.defined()) fn(join_name(prefix, "bias"), bias);
}

// ---- RMSNorm --------------------------------------------------------------------
RMSNorm::RMSNorm(std::int64_t dim, double eps_, DType dt, Device dev)
    : weight(Tensor::full({dim}, 1.0, dt, dev)), eps(eps_) {}

Tensor RMSNorm::forward(const Tensor& x, const OpOptions& opt) const {
  return rms_norm(x, weight, eps, opt);
}

void RMSNorm::forward_out(const Tensor& out, const Tensor& x, const OpOptions& opt) const {
  rms_norm_out(out, x, weight, eps, opt);
}

void RMSNorm::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  fn(join_name(prefix, "weight"), weight);
}

// ---- MLP ------------------------------------------------------------------------
MLP::MLP(std::int64_t dim, std::int64_t hidden, bool bias, Activation a, DType dt, Device dev)
    : fc(dim, hidden, bias, dt, dev), proj(hidden, dim, bias, dt, dev), act(a) {}

Tensor MLP::forward(const Tensor& x, const MatmulOptions& opt) const {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  forward_out(out, x, Tensor::empty(with_last(x.shape(), hidden_size()), x.dtype(), x.device()),
              overwrite(opt));
  return out;
}

void MLP::forward_out(const Tensor& out, const Tensor& x, const Tensor& hidden,
                      const MatmulOptions& opt) const {
  fc.forward_out(hidden, x, overwrite(opt));
  // In place for inference; a fresh tensor under a tape, whose backward
  // reads the activation's input.
  const Tensor activated = autograd::detail::recording_tape() != nullptr
                               ? Tensor::empty(hidden.shape(), hidden.dtype(), hidden.device())
                               : hidden;
  activation_out(act, activated, hidden, opt);
  proj.forward_out(out, activated, opt);  // accumulates into out when asked (a residual)
}

void MLP::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  fc.visit_parameters(join_name(prefix, "fc"), fn);
  proj.visit_parameters(join_name(prefix, "proj"), fn);
}

// ---- GatedMLP -------------------------------------------------------------------
GatedMLP::GatedMLP(std::int64_t dim, std::int64_t hidden, bool bias, Activation a, DType dt,
                   Device dev)
    : gate_up(dim, 2 * hidden, bias, dt, dev), down(hidden, dim, bias, dt, dev), act(a) {}

Tensor GatedMLP::forward(const Tensor& x, const MatmulOptions& opt) const {
  const std::int64_t f = hidden_size();
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  forward_out(out, x, Tensor::empty(with_last(x.shape(), 2 * f), x.dtype(), x.device()),
              Tensor::empty(with_last(x.shape(), f), x.dtype(), x.device()), overwrite(opt));
  return out;
}

void GatedMLP::forward_out(const Tensor& out, const Tensor& x, const Tensor& gate_up_buf,
                           const Tensor& act_buf, const MatmulOptions& opt) const {
  const std::int64_t f = hidden_size();
  gate_up.forward_out(gate_up_buf, x, overwrite(opt));
  const int last = gate_up_buf.dim() - 1;
  const Tensor gate = gate_up_buf.narrow(last, 0, f), up = gate_up_buf.narrow(last, f, f);
  if (act == Activation::silu) {
    silu_mul_out(act_buf, gate, up, opt);  // SwiGLU: one op instead of two
  } else {
    const Tensor activated = autograd::detail::recording_tape() != nullptr
                                 ? Tensor::empty(act_buf.shape(), act_buf.dtype(), act_buf.device())
                                 : act_buf;  // as in MLP::forward_out
    activation_out(act, activated, gate, opt);
    mul_out(act_buf, activated, up, opt);
  }
  down.forward_out(out, act_buf, opt);  // accumulates into out when asked (a residual)
}

void GatedMLP::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  gate_up.visit_parameters(join_name(prefix, "gate_up"), fn);
  down.visit_parameters(join_name(prefix, "down"), fn);
}

}  // namespace strata::nn
