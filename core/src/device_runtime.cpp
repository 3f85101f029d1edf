// Holds the runtimes that device backends install during registration.
#include "strata/device_runtime.hpp"

#include <array>
#include <mutex>

#include "strata/registry.hpp"

namespace strata {
namespace {
std::array<std::unique_ptr<DeviceRuntime>, 2>& runtimes() {
  static std::array<std::unique_ptr<DeviceRuntime>, 2> r;
  return r;
}
}  // namespace

std::unique_ptr<DeviceRuntime> install_device_runtime(std::unique_ptr<DeviceRuntime> rt) {
  const auto slot = static_cast<std::size_t>(rt->type());
  std::swap(runtimes()[slot], rt);
  return rt;
}

DeviceRuntime* device_runtime(DeviceType t) {
  // Runtimes are installed while the registry fills; make sure that happened
  // so a Tensor can reach the GPU before any op was ever called.
  Registry::get();
  return runtimes()[static_cast<std::size_t>(t)].get();
}

}  // namespace strata
