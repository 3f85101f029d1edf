// The cuda backend when this library was built without a CUDA compiler: it
// is listed (so `strata info` and Registry::find can say why it is missing)
// but has no runtime and no kernels.
#include "strata/registry.hpp"

namespace strata {

void register_cuda_backend(Registry& r) {
  BackendInfo info;
  info.name = "cuda";
  info.device = DeviceType::cuda;
  info.compiled = false;
  info.available = false;
  info.why_not = "not built (no CUDA compiler at configure time)";
  info.description = "streaming CUDA kernels (not in this build)";
  r.add_backend(std::move(info));
}

}  // namespace strata
