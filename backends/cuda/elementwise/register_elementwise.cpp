// Registration of the cuda elementwise kernels: filled in as they land.
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_elementwise(Registry&) {}

}  // namespace strata::cuda
