// The cuda backend of a CUDA build, in the main library: the registry lists
// it from the start (its BackendId never changes) and loads its module the
// first time something asks for cuda. A program that never does, never maps
// the module, the CUDA runtime or cuBLAS.
#include "cuda_module/loader.hpp"

#include <atomic>
#include <string>

#include "strata/detail/module.hpp"

namespace strata {
namespace {

std::atomic<Registry::Filler> g_linked{nullptr};

const char* const kDescription =
    "streaming (FlashAttention-2 style) CUDA kernels, exact f32/f64 FFMA";

// Runs once, under the registry's load lock: registers the backend from
// the module, or lists it as unavailable with the loader's reason.
void load_cuda_module(Registry& r) {
  if (Registry::Filler linked = g_linked.load(std::memory_order_acquire)) {
    linked(r);
    return;
  }
  std::string why;
  void* entry = detail::load_module_entry(kCudaModuleFile, kCudaModuleEntry, &why);
  if (entry == nullptr) {
    BackendInfo info;
    info.name = "cuda";
    info.device = DeviceType::cuda;
    info.compiled = true;
    info.available = false;
    info.why_not = "the cuda module did not load: " + why;
    info.description = kDescription;
    r.add_backend(std::move(info));
    return;
  }
  reinterpret_cast<void (*)(Registry&)>(entry)(r);
}

}  // namespace

void use_linked_cuda_backend(Registry::Filler register_linked) {
  g_linked.store(register_linked, std::memory_order_release);
}

void declare_cuda_module(Registry& r) {
  // Compiled in, not available until the module is loaded.
  r.add_deferred_backend(
      BackendInfo{"cuda", DeviceType::cuda, true, false,
                  "not loaded yet (the cuda module loads on first use)", kDescription},
      &load_cuda_module);
}

}  // namespace strata
