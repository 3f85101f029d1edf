#pragma once
// What optim.cpp (the optimizers, the per-op update) and optim_fused.cpp
// (the fused multi-tensor update) share.
#include <string>
#include <utility>
#include <vector>

#include "strata/nn/optim.hpp"

namespace strata::nn::detail {

using Params = std::vector<std::pair<std::string, Tensor*>>;
// The gradients, in the parameters' order (Module::named_gradients: one walk
// of the module, where Module::grad walks it once per name).
using Grads = std::vector<std::pair<std::string, Tensor>>;

// The precision of the update and of the optimizer's state for a parameter.
inline DType state_dtype(DType param) { return param == DType::f64 ? DType::f64 : DType::f32; }
inline bool is_16bit(DType dt) { return dt == DType::f16 || dt == DType::bf16; }

// True when every parameter and its gradient can go through one of the
// fused ops: floating, contiguous, on the first parameter's device, the
// gradient of the parameter's shape and dtype (or f32 for a 16-bit one).
bool fusable(const Params& params, const Grads& grads);

// One fused call's lists: parameters of one dtype whose gradients have one
// dtype, all decayed or none, all with masters or none.
struct FusedGroup {
  std::vector<Tensor> params, grads, state0, state1, masters;
  bool decay = false;
};
// One parameter's tensors (state1 undefined for SGD, state0 too without
// momentum, master undefined without one).
struct FusedSlot {
  Tensor param, grad, state0, state1, master;
  bool decay = false;
};
std::vector<FusedGroup> fused_groups(const std::vector<FusedSlot>& slots);

}  // namespace strata::nn::detail
