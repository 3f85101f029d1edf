// The one place that lists every backend. Registry::get() calls this once;
// nothing registers itself statically (a static library would drop it).
#include "strata/registry.hpp"

namespace strata {

void register_reference_backend(Registry& r);  // backends/reference/register.cpp
void register_cpu_backend(Registry& r);        // backends/cpu/register.cpp
// backends/cuda/register.cpp, or backends/no_cuda/register.cpp when CUDA is
// not built (it then reports the backend as "not built").
void register_cuda_backend(Registry& r);

void register_backends(Registry& r) {
  register_reference_backend(r);
  register_cpu_backend(r);
  register_cuda_backend(r);
}

}  // namespace strata
