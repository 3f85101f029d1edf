// Holds the runtimes that device backends install during registration.
#include "strata/device_runtime.hpp"

#include <array>
#include <atomic>
#include <mutex>

#include "strata/error.hpp"
#include "strata/registry.hpp"

namespace strata {

// ---- defaults for runtimes without streams or graphs ------------------------
namespace {
[[noreturn]] void no_graphs(const DeviceRuntime& rt, const char* call) {
  fail(call, device_type_name(rt.type()), " has no streams or graphs in this build");
}
}  // namespace

void* DeviceRuntime::create_stream(int) { no_graphs(*this, "Stream"); }
void DeviceRuntime::destroy_stream(void*, int) noexcept {}
void DeviceRuntime::synchronize_stream(void*, int) { no_graphs(*this, "Stream::synchronize"); }
void DeviceRuntime::begin_capture(void*, int) { no_graphs(*this, "Graph::capture"); }
void* DeviceRuntime::end_capture(void*, int) { no_graphs(*this, "Graph::capture"); }
void DeviceRuntime::abort_capture(void*, int) noexcept {}
void DeviceRuntime::launch_graph(void*, void*, int) { no_graphs(*this, "Graph::replay"); }
void DeviceRuntime::destroy_graph(void*, int) noexcept {}
void* DeviceRuntime::allocate_pinned(std::size_t) { no_graphs(*this, "PinnedBuffer"); }
void DeviceRuntime::free_pinned(void*) noexcept {}
void DeviceRuntime::copy_to_device_async(void*, const void*, std::size_t, void*, int) {
  no_graphs(*this, "Stream::copy_to_device");
}

namespace {
// The owners, and beside them the pointers that device_runtime() reads
// without a lock: a deferred backend may install its runtime while other
// threads already ask for one.
std::array<std::unique_ptr<DeviceRuntime>, 2>& runtimes() {
  static std::array<std::unique_ptr<DeviceRuntime>, 2> r;
  return r;
}
std::array<std::atomic<DeviceRuntime*>, 2> g_current{};
std::mutex g_install_mutex;
}  // namespace

std::unique_ptr<DeviceRuntime> install_device_runtime(std::unique_ptr<DeviceRuntime> rt) {
  const auto slot = static_cast<std::size_t>(rt->type());
  std::lock_guard<std::mutex> lock(g_install_mutex);
  g_current[slot].store(rt.get(), std::memory_order_release);
  std::swap(runtimes()[slot], rt);
  return rt;
}

DeviceRuntime* device_runtime(DeviceType t) {
  // Runtimes are installed while the registry fills, or when a deferred
  // backend of that device kind loads (the cuda module): make sure that
  // happened so a Tensor can reach the GPU before any op was ever called.
  const Registry& reg = Registry::get();
  const auto slot = static_cast<std::size_t>(t);
  DeviceRuntime* rt = g_current[slot].load(std::memory_order_acquire);
  if (rt == nullptr) {
    reg.load_deferred(t);
    rt = g_current[slot].load(std::memory_order_acquire);
  }
  return rt;
}

}  // namespace strata
