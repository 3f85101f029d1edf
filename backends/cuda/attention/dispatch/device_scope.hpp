#pragma once
// The device an attention call runs on (its output's), shared by the
// streaming launcher (dispatch/launch_streaming.cu) and the tensor-core launchers
// (dispatch/flash_host.hpp).
#include <cuda_runtime.h>

#include "cuda/cuda_check.hpp"
#include "strata/error.hpp"

namespace strata::cuda {

// The device that holds p, or -1 when p is not device memory. With one
// device (the usual case) there is no per-call pointer query.
inline int attention_device_of(const void* p) {
  static const int count = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  if (count == 1) return 0;
  cudaPointerAttributes attr{};
  CUDA_CHECK(cudaPointerGetAttributes(&attr, p));
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged ? attr.device : -1;
}

// Makes out's device current for the call and restores the caller's.
struct AttentionDeviceScope {
  int prev = 0, dev = 0;
  explicit AttentionDeviceScope(const void* out) {
    dev = attention_device_of(out);
    check(dev >= 0, "softmax_attention", "cuda: out is not device memory");
    CUDA_CHECK(cudaGetDevice(&prev));
    if (prev != dev) CUDA_CHECK(cudaSetDevice(dev));
  }
  ~AttentionDeviceScope() {
    if (prev != dev) (void)cudaSetDevice(prev);
  }
  AttentionDeviceScope(const AttentionDeviceScope&) = delete;
  AttentionDeviceScope& operator=(const AttentionDeviceScope&) = delete;
};

}  // namespace strata::cuda
