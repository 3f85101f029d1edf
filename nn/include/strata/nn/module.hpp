#pragma once
// nn::Module: a plain C++ object holding named parameters. Every module lists
// its parameters through visit_parameters(), so loading, saving, moving,
// casting and counting are written once, here. Names follow the module tree
// ("blocks.0.attn.qkv.weight"). docs/guide/models.md.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

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
  virtual ~Module() = default;

  // Calls fn once per defined parameter, in a fixed order, with its full name.
  virtual void visit_parameters(const std::string& prefix, const ParamVisitor& fn) = 0;

  // (name, pointer to the module's own Tensor) pairs, in visiting order.
  std::vector<std::pair<std::string, Tensor*>> named_parameters();
  std::int64_t num_parameters();
  // Moves / casts every parameter (a fresh tensor where it changes).
  virtual void to(Device dev);
  virtual void to(DType dt);
};

// Fills every parameter with a seeded normal draw: std * N(0, 1), except the
// weights of norm layers (a name ending in "norm*.weight" or "ln_*.weight"),
// which get 1 + std * N(0, 1) so that a random model stays well scaled.
// Each parameter has its own seed (seed + its visiting index).
void init_normal(Module& m, std::uint64_t seed, double std = 0.02);

}  // namespace strata::nn
