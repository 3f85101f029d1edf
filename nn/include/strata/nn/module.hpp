#pragma once
// nn::Module: a plain C++ object holding named parameters. Every module lists
// its parameters through visit_parameters(), so loading, saving, moving,
// casting and counting are written once, here. Names follow the module tree
// ("blocks.0.attn.qkv.weight"). docs/guide/models.md.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "strata/autograd.hpp"
#include "strata/device.hpp"
#include "strata/dtype.hpp"
#include "strata/tensor.hpp"

namespace strata::nn {

// fn(full name, the parameter): the parameter may be replaced (to(), loading).
using ParamVisitor = std::function<void(const std::string& name, Tensor& param)>;

// "a" + "b" -> "a.b"; an empty prefix gives "b".
std::string join_name(const std::string& prefix, const std::string& name);

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  // Modules move (a model is returned by value) and copy (a block's init).
  Module(const Module&) = default;
  Module(Module&&) noexcept = default;
  Module& operator=(const Module&) = default;
  Module& operator=(Module&&) noexcept = default;

  // Calls fn once per defined parameter, in a fixed order, with its full name.
  virtual void visit_parameters(const std::string& prefix, const ParamVisitor& fn) = 0;

  // (name, pointer to the module's own Tensor) pairs, in visiting order.
  std::vector<std::pair<std::string, Tensor*>> named_parameters();
  std::int64_t num_parameters();
  // Moves / casts every parameter (a fresh tensor where it changes).
  virtual void to(Device dev);
  virtual void to(DType dt);

  // ---- gradients (docs/guide/autograd.md) -----------------------------------
  // One gradient per parameter, kept with the module under the parameter's
  // full name (PyTorch's .grad): same shape, dtype and device, made (zeros)
  // on first use and made again when the parameter moved or changed dtype.
  // watch() hands every parameter and its gradient to the tape, so that
  // backward() adds into them; zero_grad() sets them to 0 between steps
  // (gradient accumulation: call it once per optimizer step).
  void watch(autograd::Tape& tape);
  void zero_grad();
  // The gradient of parameter `name` (as named_parameters() names it).
  const Tensor& grad(const std::string& name);
  std::vector<std::pair<std::string, Tensor>> named_gradients();

 private:
  Tensor& grad_for(const std::string& name, const Tensor& param);
  std::map<std::string, Tensor> grads_;
};

// Fills every parameter with a seeded normal draw: std * N(0, 1), except the
// weights of norm layers (a name ending in "norm*.weight" or "ln_*.weight"),
// which get 1 + std * N(0, 1) so that a random model stays well scaled.
// Each parameter has its own seed (seed + its visiting index).
void init_normal(Module& m, std::uint64_t seed, double std = 0.02);

}  // namespace strata::nn
