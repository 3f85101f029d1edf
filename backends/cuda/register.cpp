// Registers the cuda backend: installs the CUDA DeviceRuntime (always, so
// that core can report a precise reason when there is no device) and the
// softmax_attention kernels (forward and backward).
#include <memory>
#include <string>

#include "cuda/attention/dispatch/entry_points.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/optim/optim_cuda.hpp"
#include "strata/registry.hpp"

namespace strata {
namespace cuda {
void register_cuda_elementwise(Registry& r);  // elementwise/
void register_cuda_rows(Registry& r);    // rows/: reductions, softmax, norms, embedding, rotary
void register_cuda_matmul(Registry& r);  // matmul/
}  // namespace cuda

void register_cuda_backend(Registry& r) {
  std::string why;
  const int count = cuda::probe_devices(&why);
  install_device_runtime(cuda::make_runtime());

  BackendInfo info;
  info.name = "cuda";
  info.device = DeviceType::cuda;
  info.compiled = true;
  info.available = count > 0;
  info.why_not = count > 0 ? std::string() : why;
  info.description = "streaming (FlashAttention-2 style) CUDA kernels, exact f32/f64 FFMA";
  r.add_backend(std::move(info));

  // f32 precision high / medium on the tensor cores first: they accept only
  // calls that ask for their precision; everything else falls through to
  // the exact kernels.
  cuda::register_cuda_flash_tf32(r);
  r.add_kernel<AttentionArgs>("softmax_attention", "cuda", DType::f32, "cuda.attention.streaming",
                              &cuda::attention_f32, &cuda::attention_supports);
  r.add_kernel<AttentionArgs>("softmax_attention", "cuda", DType::f64, "cuda.attention.streaming",
                              &cuda::attention_f64, &cuda::attention_supports);
  cuda::register_cuda_flash_mma(r);  // bf16, f16 on the tensor cores
  cuda::register_cuda_attention_backward(r);
  cuda::register_cuda_elementwise(r);
  cuda::register_cuda_rows(r);
  cuda::register_cuda_matmul(r);
  // The fused optimizer updates (optim/optim_step.cu), keyed by the params' dtype.
  for (const char* op : {"adamw_step_", "sgd_step_"})
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
      r.add_kernel<OptimStepArgs>(op, "cuda", dt, std::string("cuda.optim.") + op,
                                  &cuda::optim_step);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    r.add_kernel<SumOfSquaresArgs>("sum_of_squares", "cuda", dt, "cuda.optim.sum_of_squares",
                                   &cuda::sum_of_squares);
}

}  // namespace strata
