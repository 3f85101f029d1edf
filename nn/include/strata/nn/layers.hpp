#pragma once
// The basic modules: Linear, Embedding, LayerNorm, RMSNorm, MLP and the gated
// (SwiGLU) MLP. Each is a thin owner of parameters over one or a few Strata
// ops; the maths lives in the ops. Every forward has an allocating form and
// an `_out` form writing into caller buffers (the model's workspaces), so a
// decode step allocates nothing. `opt` picks the backend ("auto", "reference",
// "cpu", "cuda") and the stream.
#include <cstdint>
#include <string>

#include "strata/matmul.hpp"
#include "strata/nn/module.hpp"

namespace strata::nn {

// The options of a sublayer's inner projections, whose outputs are scratch:
// `opt` without accumulate. A sublayer's forward_out with opt.accumulate
// adds its result into out (x += mlp(x), the residual, with no add op: the
// last projection's GEMM accumulates, BLAS beta = 1).
inline MatmulOptions overwrite(MatmulOptions opt) {
  opt.accumulate = false;
  return opt;
}

enum class Activation { silu, gelu, gelu_tanh };
// "silu"/"swish", "gelu", "gelu_new"/"gelu_pytorch_tanh"/"gelu_tanh"; else a strata::Error.
Activation parse_activation(const std::string& name);
// act(x) into out (out may be x).
void activation_out(Activation a, const Tensor& out, const Tensor& x, const OpOptions& opt);

// y = x W^T + b; weight [out, in] (PyTorch's layout), bias [out] or undefined.
class Linear : public Module {
 public:
  Linear() = default;
  Linear(std::int64_t in, std::int64_t out, bool bias, DType dt = DType::f32,
         Device dev = Device::cpu());  // zero-initialised
  std::int64_t in_features() const { return weight.size(1); }
  std::int64_t out_features() const { return weight.size(0); }
  // x [..., in] -> y [..., out]
  Tensor forward(const Tensor& x, const MatmulOptions& opt = {}) const;
  void forward_out(const Tensor& y, const Tensor& x, const MatmulOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Tensor weight;
  Tensor bias;
};

// Row lookup; weight [num, dim].
class Embedding : public Module {
 public:
  Embedding() = default;
  Embedding(std::int64_t num, std::int64_t dim, DType dt = DType::f32, Device dev = Device::cpu());
  // ids [...] (i32/i64) -> [..., dim]
  Tensor forward(const Tensor& ids, const OpOptions& opt = {}) const;
  void forward_out(const Tensor& out, const Tensor& ids, const OpOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Tensor weight;
};

// (x - mean) / sqrt(var + eps) * weight + bias over the last dim; weight
// ones, bias zeros (or no bias).
class LayerNorm : public Module {
 public:
  LayerNorm() = default;
  LayerNorm(std::int64_t dim, double eps, bool bias = true, DType dt = DType::f32,
            Device dev = Device::cpu());
  // x [..., dim] -> [..., dim]
  Tensor forward(const Tensor& x, const OpOptions& opt = {}) const;
  void forward_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Tensor weight;
  Tensor bias;
  double eps = 1e-5;
};

// x / sqrt(mean(x^2) + eps) * weight over the last dim; weight ones.
class RMSNorm : public Module {
 public:
  RMSNorm() = default;
  RMSNorm(std::int64_t dim, double eps, DType dt = DType::f32, Device dev = Device::cpu());
  // x [..., dim] -> [..., dim]
  Tensor forward(const Tensor& x, const OpOptions& opt = {}) const;
  void forward_out(const Tensor& out, const Tensor& x, const OpOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Tensor weight;
  double eps = 1e-6;
};

// proj(act(fc(x))): GPT-2's MLP (act = gelu_tanh there).
class MLP : public Module {
 public:
  MLP() = default;
  MLP(std::int64_t dim, std::int64_t hidden, bool bias, Activation act, DType dt = DType::f32,
      Device dev = Device::cpu());
  std::int64_t hidden_size() const { return fc.out_features(); }
  // x [..., dim] -> [..., dim]
  Tensor forward(const Tensor& x, const MatmulOptions& opt = {}) const;
  // hidden: scratch [..., hidden] (x's leading dims). opt.accumulate: out += result.
  void forward_out(const Tensor& out, const Tensor& x, const Tensor& hidden,
                   const MatmulOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Linear fc;
  Linear proj;
  Activation act = Activation::gelu_tanh;
};

// down(act(gate(x)) * up(x)) (SwiGLU with act = silu). gate and up are one
// fused Linear gate_up [2 hidden, dim] (gate's rows first); its output halves
// are narrow views, so one GEMM serves both.
class GatedMLP : public Module {
 public:
  GatedMLP() = default;
  GatedMLP(std::int64_t dim, std::int64_t hidden, bool bias, Activation act = Activation::silu,
           DType dt = DType::f32, Device dev = Device::cpu());
  std::int64_t hidden_size() const { return down.in_features(); }
  // x [..., dim] -> [..., dim]
  Tensor forward(const Tensor& x, const MatmulOptions& opt = {}) const;
  // gate_up: scratch [..., 2 hidden]; act_buf: scratch [..., hidden].
  // opt.accumulate: out += result.
  void forward_out(const Tensor& out, const Tensor& x, const Tensor& gate_up_buf,
                   const Tensor& act_buf, const MatmulOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Linear gate_up;
  Linear down;
  Activation act = Activation::silu;
};

// Leading dims of x with the last replaced: x [..., a], n -> [..., n].
Shape with_last(const Shape& s, std::int64_t n);

}  // namespace strata::nn
