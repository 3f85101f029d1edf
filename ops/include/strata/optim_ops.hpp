#pragma once
// Fused multi-tensor optimizer updates: one call updates a whole list of
// parameters in a few kernel launches (on cuda a multi-tensor-apply launch
// walks a table of chunks of every tensor, as PyTorch's fused AdamW and
// apex do), instead of several elementwise ops per parameter. The maths is
// torch.optim's. nn::AdamW and nn::SGD (strata/nn/optim.hpp) call these.
//
// Lists: params[i], grads[i], the state tensors [i] and masters[i] belong
// together. Every tensor contiguous and on one device; params of one
// dtype (f32, f64, f16, bf16), grads of one dtype (the params', or f32 for
// 16-bit params), state f64 for f64 params and f32 otherwise, each the
// shape of its param. `masters` is empty, or one f32 master per 16-bit
// param: the update then runs on the master and the param receives it
// rounded (bf16 compute with f32 master weights). Without masters a 16-bit
// param is widened to f32, updated and rounded back. Bad input is a
// strata::Error naming the op, the list, the index and the value, before
// anything is written.
#include <cstdint>
#include <vector>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// One AdamW update (torch.optim.AdamW): with t = step (1-based),
//   p *= 1 - lr weight_decay
//   m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
//   p -= lr / (1 - beta1^t) m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
struct AdamWStep {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0;
  std::int64_t step = 1;
  // g is read as g * grad_scale rounded to the grads' dtype, the value a
  // separate mul_out(g, g, grad_scale) would leave (clipping's coefficient
  // without a pass of its own over the gradients); g is not written.
  double grad_scale = 1;
};
void adamw_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                 const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq,
                 const std::vector<Tensor>& masters, const AdamWStep& s, const OpOptions& opt = {});

// One SGD update (torch.optim.SGD): d = g + weight_decay p; with momentum
// buf = d on the first step, else buf = momentum buf + (1 - dampening) d;
// d = nesterov ? d + momentum buf : buf; p -= lr d. momentum_buffers is
// empty when momentum is 0.
struct SGDStep {
  double lr = 1e-3;
  double momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first_step = false;  // the buffers are set to d, not updated
  double grad_scale = 1;    // as AdamWStep::grad_scale
};
void sgd_step_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
               const std::vector<Tensor>& momentum_buffers, const std::vector<Tensor>& masters,
               const SGDStep& s, const OpOptions& opt = {});

// The sum of the squares of every element of every tensor of the list
// (the squared global norm nn::grad_norm and clipping need), accumulated in
// f64 and returned as a 0-d f64 tensor on the tensors' device: one reduction
// over the whole list (on cuda a multi-tensor apply of per-block partial
// sums, then one block adding the partials in a fixed order), so the norm of
// a model's gradients costs one read of them and one sync. Every tensor
// defined, contiguous, of one floating dtype (f32, f64, f16, bf16) and on
// one device; empty tensors add nothing; an empty list gives 0 on the cpu.
// Deterministic: the same list gives the same bits every call.
Tensor sum_of_squares(const std::vector<Tensor>& tensors, const OpOptions& opt = {});

}  // namespace strata
