// Linked into programs that hold the cuda backend themselves (the CUDA tests
// and benchmarks): while the program starts, it points the registry's cuda
// loader at that copy, so the module is never loaded beside it.
#include "cuda_module/loader.hpp"

namespace strata {
void register_cuda_backend(Registry& r);  // backends/cuda/register.cpp

namespace {
const bool kLinked = (use_linked_cuda_backend(&register_cuda_backend), true);
}  // namespace
}  // namespace strata
