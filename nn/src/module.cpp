#include "strata/nn/module.hpp"

#include "strata/elementwise.hpp"

namespace strata::nn {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::vector<std::pair<std::string, Tensor*>> Module::named_parameters() {
  std::vector<std::pair<std::string, Tensor*>> out;
  visit_parameters("", [&](const std::string& name, Tensor& p) { out.emplace_back(name, &p); });
  return out;
}

std::int64_t Module::num_parameters() {
  std::int64_t n = 0;
  visit_parameters("", [&](const std::string&, Tensor& p) { n += p.numel(); });
  return n;
}

void Module::to(Device dev) {
  visit_parameters("", [&](const std::string&, Tensor& p) { p = p.to(dev); });
}

void Module::to(DType dt) {
  check(is_floating(dt), "Module::to", "parameters must be floating, not ", dtype_name(dt));
  visit_parameters("", [&](const std::string&, Tensor& p) {
    if (p.dtype() != dt) p = cast(p, dt);
  });
}

Tensor& Module::grad_for(const std::string& name, const Tensor& param) {
  Tensor& g = grads_[name];
  if (!g.defined() || g.shape() != param.shape() || g.dtype() != param.dtype() ||
      g.device() != param.device())
    g = Tensor::zeros(param.shape(), param.dtype(), param.device());
  return g;
}

void Module::watch(autograd::Tape& tape) {
  visit_parameters("",
                   [&](const std::string& name, Tensor& p) { tape.watch(p, grad_for(name, p)); });
}

void Module::zero_grad() {
  visit_parameters("", [&](const std::string& name, Tensor& p) { fill_(grad_for(name, p), 0.0); });
}

const Tensor& Module::grad(const std::string& name) {
  const Tensor* found = nullptr;
  visit_parameters("", [&](const std::string& n, Tensor& p) {
    if (n == name) found = &grad_for(n, p);
  });
  check(found != nullptr, "Module::grad", "no parameter is named '", name, "'");
  return *found;
}

std::vector<std::pair<std::string, Tensor>> Module::named_gradients() {
  std::vector<std::pair<std::string, Tensor>> out;
  visit_parameters("",
                   [&](const std::string& n, Tensor& p) { out.emplace_back(n, grad_for(n, p)); });
  return out;
}

namespace {
bool is_norm_weight(const std::string& name) {
  const auto dot = name.rfind('.');
  if (dot == std::string::npos || name.substr(dot + 1) != "weight") return false;
  const auto prev = name.rfind('.', dot - 1);
  const std::string owner = name.substr(prev == std::string::npos ? 0 : prev + 1,
                                        dot - (prev == std::string::npos ? 0 : prev + 1));
  return owner.rfind("norm", 0) == 0 || owner.rfind("ln_", 0) == 0;
}
}  // namespace

void init_normal(Module& m, std::uint64_t seed, double std) {
  std::uint64_t i = 0;
  m.visit_parameters("", [&](const std::string& name, Tensor& p) {
    Tensor r = mul(Tensor::randn(p.shape(), seed + i++, DType::f32, p.device()), std);
    if (is_norm_weight(name)) r = add(r, 1.0);
    copy_(p, r);
  });
}

}  // namespace strata::nn
