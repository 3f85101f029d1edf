// The fuzz targets exercise core (views, copies, storage) and the CLI's .npy
// reader, none of which dispatch to a backend: the registry is linked with
// no backend registered, so the targets build from core/src alone, without
// Eigen, OpenMP or the backends' kernels.
#include "strata/registry.hpp"

namespace strata {
void register_backends(Registry&) {}
}  // namespace strata
