// The entry point of the cuda module (libstrata_cuda.so), the only symbol it
// exports (exports.map): the main library's loader (loader.cpp) calls it
// once, with the registry's next table, the first time cuda is asked for.
#include "cuda_module/loader.hpp"

namespace strata {
void register_cuda_backend(Registry& r);  // backends/cuda/register.cpp
}  // namespace strata

extern "C" __attribute__((visibility("default"))) void strata_cuda_module_register(
    strata::Registry& r) {
  strata::register_cuda_backend(r);
}
