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
