#pragma once
// CUDA_CHECK: turns a failed CUDA runtime call into strata::Error naming the
// call, the source location and CUDA's own message. Only backends/cuda/
// includes this (it pulls in the CUDA runtime header).
#include <cuda_runtime_api.h>

#include "strata/error.hpp"

namespace strata::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file,
                                          int line) {
  // Clears a non-sticky error so later calls in this process still work.
  (void)cudaGetLastError();
  fail("cuda", call, " failed at ", file, ":", line, ": ", cudaGetErrorName(err), " (",
       cudaGetErrorString(err), ")");
}

}  // namespace strata::cuda

#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    const cudaError_t strata_cuda_err_ = (call);                                     \
    if (strata_cuda_err_ != cudaSuccess)                                             \
      ::strata::cuda::throw_cuda_error(strata_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a <<<>>> launch: reports a bad configuration at once.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
