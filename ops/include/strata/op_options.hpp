#pragma once
// Options every op takes: which backend runs it and on which stream.
#include <string>

namespace strata {

struct OpOptions {
  // "auto" (the backend for the tensors' device: cpu on the host, cuda on a
  // GPU), "reference", "cpu" or "cuda".
  std::string backend = "auto";
  void* stream = nullptr;  // cudaStream_t for the cuda backend; null = default stream
};

// f32 matmul precision, in PyTorch's words (torch.set_float32_matmul_precision).
enum class Precision {
  highest,  // exact f32 products (FFMA / f32 GEMM); the default
  high,     // f32-accurate on tensor cores (3xTF32 split) where a backend has it, else highest
  medium,   // TF32 tensor cores (10-bit mantissa products) where a backend has it, else highest
};

}  // namespace strata
