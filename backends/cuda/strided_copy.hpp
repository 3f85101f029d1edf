#pragma once
// The one element-wise strided copy on the device: the runtime's
// copy_strided (Tensor::contiguous and friends) and the attention launcher's
// packing of layouts the kernels cannot read with 16-byte loads share it.
#include <cuda_runtime_api.h>

#include <cstddef>

#include "strata/device_runtime.hpp"

namespace strata::cuda {

// Copies src into dst (same rank and shape, any strides, elements of
// `itemsize` bytes) on stream `st`, without waiting for it.
void strided_copy_async(const StridedLayout& dst, const StridedLayout& src, std::size_t itemsize,
                        cudaStream_t st);

}  // namespace strata::cuda
