// Registration of the cuda rows kernels: filled in as they land.
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_rows(Registry&) {}

}  // namespace strata::cuda
