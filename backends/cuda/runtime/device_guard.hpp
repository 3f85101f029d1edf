#pragma once
// DeviceGuard: makes a device current for a scope and restores the previous
// one (the runtime's copies, streams and graphs, and device memory's
// allocations).
#include <cuda_runtime_api.h>

#include "cuda/cuda_check.hpp"

namespace strata::cuda {

// Makes `index` current for the scope and restores the previous device.
// `needed` false (one visible device: index 0 is the only one, and current)
// skips the cudaGetDevice of a per-op allocation.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index, bool needed = true) {
    if (!needed) return;
    CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != index) CUDA_CHECK(cudaSetDevice(index));
    changed_ = previous_ != index;
  }
  ~DeviceGuard() {
    if (changed_) (void)cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

}  // namespace strata::cuda
