// The one place that lists every backend. It lives outside core, which knows
// no backend: while the program starts, this file installs register_backends
// as the registry's filler, and Registry::get() calls it once. Every op front
// end refers to register_backends (strata/detail/op_checks.hpp), so a program
// that calls any op links this file, and a static library cannot drop it.
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

namespace {
const bool kFillerInstalled = (Registry::set_filler(&register_backends), true);
}  // namespace

}  // namespace strata
