#pragma once
// OptimStepArgs: the plain argument struct of the fused multi-tensor
// optimizer updates (adamw_step_, sgd_step_; strata/optim_ops.hpp). One
// call updates `count` parameters; each is a row of `tensors` (a host
// array that lives for the call), every pointer the address of a
// contiguous tensor of `numel` elements on the call's device:
//
//   param   param_dtype (f32, f64, f16, bf16), read and written
//   grad    grad_dtype: param_dtype, or f32 for a 16-bit param, read
//   state0  state_dtype (f64 for f64 params, else f32): AdamW's exp_avg,
//           SGD's momentum buffer (null when SGD has no momentum)
//   state1  state_dtype: AdamW's exp_avg_sq (null for SGD)
//   master  f32 master copy of a 16-bit param, or null (has_master false)
//
// With a master the update runs on the master and the param receives the
// master rounded to its dtype; without one a 16-bit param is widened to
// f32, updated and rounded back. Every param of a call has one dtype, every
// grad one dtype. The registry key is param_dtype. Nothing overlaps.
#include <cstdint>

#include "strata/dtype.hpp"

namespace strata {

struct OptimTensor {
  void* param = nullptr;
  const void* grad = nullptr;
  void* state0 = nullptr;
  void* state1 = nullptr;
  void* master = nullptr;
  std::int64_t numel = 0;
};

enum class OptimRule : std::uint8_t { adamw, sgd };

struct OptimStepArgs {
  OptimRule rule = OptimRule::adamw;
  int count = 0;
  const OptimTensor* tensors = nullptr;
  DType param_dtype = DType::f32, grad_dtype = DType::f32, state_dtype = DType::f32;
  bool has_master = false;
  double lr = 0;
  double weight_decay = 0;  // AdamW: decoupled (p *= 1 - lr wd); SGD: L2 (g += wd p)
  // AdamW (torch.optim.AdamW): step is the 1-based count t of this update.
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  std::int64_t step = 1;
  // SGD (torch.optim.SGD): first_step makes the buffer the gradient itself.
  double momentum = 0, dampening = 0;
  bool nesterov = false, first_step = false;
  // Every gradient element is first multiplied by grad_scale (rounded to
  // the compute type) and the product rounded to grad_dtype, exactly as a
  // separate mul_out(g, g, grad_scale) would leave it; g itself is not
  // written. 1 leaves g as it is (gradient clipping passes its coefficient).
  double grad_scale = 1;
  void* stream = nullptr;  // cudaStream_t for device backends; null = default
};

// sum_of_squares (strata/optim_ops.hpp): the sum of x^2 over every element
// of `count` contiguous tensors of one dtype (f32, f64, f16, bf16, the
// registry key), each a row of `tensors` (a host array that lives for the
// call), accumulated in f64 and written as one f64 to `out` on the call's
// device. The order of the additions is fixed by the kernel, never by
// timing: the same call gives the same bits every time.
struct SquaresTensor {
  const void* data = nullptr;
  std::int64_t numel = 0;
};

struct SumOfSquaresArgs {
  int count = 0;
  const SquaresTensor* tensors = nullptr;
  DType dtype = DType::f32;
  void* out = nullptr;     // one f64
  void* stream = nullptr;  // cudaStream_t for device backends; null = default
};

}  // namespace strata
