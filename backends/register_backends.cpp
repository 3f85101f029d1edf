// The one place that lists every backend. It lives outside core, which knows
// no backend: while the program starts, this file installs register_backends
// as the registry's filler, and Registry::get() calls it once. Every op front
// end refers to register_backends (strata/detail/op_checks.hpp), so a program
// that calls any op links this file, and a static library cannot drop it.
#include "strata/registry.hpp"

namespace strata {

void register_reference_backend(Registry& r);  // backends/reference/register.cpp
void register_cpu_backend(Registry& r);        // backends/cpu/register.cpp
#if defined(STRATA_CUDA_MODULE)
// backends/cuda_module/loader.cpp: a CUDA build declares the backend here and
// loads its module (libstrata_cuda.so) the first time cuda is asked for.
void declare_cuda_module(Registry& r);
#else
// backends/no_cuda/register.cpp: CUDA is not built (the backend reports
// "not built").
void register_cuda_backend(Registry& r);
#endif

void register_backends(Registry& r) {
  register_reference_backend(r);
  register_cpu_backend(r);
#if defined(STRATA_CUDA_MODULE)
  declare_cuda_module(r);
#else
  register_cuda_backend(r);
#endif
}

namespace {
const bool kFillerInstalled = (Registry::set_filler(&register_backends), true);
}  // namespace

}  // namespace strata
