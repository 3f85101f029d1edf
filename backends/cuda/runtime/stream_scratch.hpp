#pragma once
// Scratch memory for one op's launches: taken from the device's
// stream-ordered pool on the op's stream and given back on that stream once
// the launches are queued (or when one throws), so a later kernel on the
// stream can never see it reused early. Allocation nodes are legal while the
// stream is being captured into a graph.
#include <cuda_runtime.h>

#include <cstddef>

#include "cuda/cuda_check.hpp"

namespace strata::cuda {

struct StreamScratch {
  void* p = nullptr;
  cudaStream_t st = nullptr;
  StreamScratch(std::size_t bytes, cudaStream_t s) : st(s) {
    if (bytes > 0) CUDA_CHECK(cudaMallocAsync(&p, bytes, st));
  }
  ~StreamScratch() {
    if (p != nullptr) (void)cudaFreeAsync(p, st);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;

  // The byte at `offset` (a multiple of 256 keeps every piece aligned).
  template <class T>
  T* at(std::size_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(p) + offset);
  }
};

}  // namespace strata::cuda
