// Deferred backends (Registry::add_deferred_backend, as the cuda module is
// declared): listed from the start with fixed ids, loaded once on the first
// request for them, never by requests for other backends, and a loader that
// throws leaves the backend unavailable with its reason.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "strata/registry.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

struct ToyArgs {
  int value = 0;
};
void run_host(const ToyArgs&) {}
void run_late(const ToyArgs&) {}

std::atomic<int> g_loads{0};

void load_late(Registry& r) {
  ++g_loads;
  // Another thread asking meanwhile waits for this load, not for a second.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  r.add_backend(BackendInfo{"late", DeviceType::cuda, true, true, "", "loaded"});
  r.add_kernel<ToyArgs>("toy", "late", DType::f32, "late.toy", &run_late);
  r.add_kernel<ToyArgs>("late_only", "late", DType::f32, "late.only", &run_late);
}

void load_broken(Registry& r) {
  r.add_kernel<ToyArgs>("toy", "broken", DType::f32, "broken.toy", &run_late);
  throw std::runtime_error("libbroken.so: cannot open shared object file");
}

Registry deferred_registry() {
  g_loads = 0;
  Registry r;
  r.add_backend(BackendInfo{"host", DeviceType::cpu, true, true, "", "toy"});
  r.add_deferred_backend(BackendInfo{"late", DeviceType::cuda, true, false, "not loaded yet", ""},
                         &load_late);
  r.add_deferred_backend(BackendInfo{"broken", DeviceType::cpu, true, false, "not loaded yet", ""},
                         &load_broken);
  r.add_kernel<ToyArgs>("toy", "host", DType::f32, "host.toy", &run_host);
  r.finalize();
  return r;
}

}  // namespace

TEST_CASE("registry: a deferred backend loads on its first request only", "[registry]") {
  const Registry r = deferred_registry();
  const OpId toy = r.op_id("toy");
  const BackendId host = r.resolve_backend("toy", "host", Device::cpu());
  CHECK(r.find(toy, host, DType::f32, ToyArgs{}).info->name == "host.toy");
  CHECK(r.deferred("late"));
  CHECK(g_loads == 0);

  const BackendId late = r.resolve_backend("toy", "late", Device::cuda());
  CHECK(g_loads == 1);
  CHECK_FALSE(r.deferred("late"));
  CHECK(r.backend(late).description == "loaded");
  CHECK(r.find(toy, late, DType::f32, ToyArgs{}).info->name == "late.toy");
  // Ids taken before the load hold; the loaded backend's own op comes after.
  CHECK(r.op_id("toy") == toy);
  CHECK(r.resolve_backend("toy", "host", Device::cpu()) == host);
  CHECK(r.op_id("late_only") > toy);
  CHECK(r.resolve_backend("toy", "late", Device::cuda()) == late);
  CHECK(g_loads == 1);
}

TEST_CASE("registry: an op only a deferred backend has loads it", "[registry]") {
  const Registry r = deferred_registry();
  CHECK(r.deferred("late"));
  CHECK(r.op_id("late_only") >= 0);
  CHECK_FALSE(r.deferred("late"));
  CHECK(g_loads == 1);
}

TEST_CASE("registry: a loader that throws leaves its backend unavailable", "[registry]") {
  const Registry r = deferred_registry();
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "broken", Device::cpu()),
                     "backend 'broken' is not available: loading the backend failed",
                     "libbroken.so: cannot open shared object file");
  const OpId toy = r.op_id("toy");
  const BackendId broken = 2;
  CHECK(r.backend(broken).name == "broken");
  CHECK_FALSE(r.has_kernel(toy, broken, DType::f32));  // its half-made table was dropped
  CHECK(r.deferred("late"));                           // the other deferred one is untouched
}

TEST_CASE("registry: listing loads every deferred backend", "[registry]") {
  const Registry r = deferred_registry();
  CHECK(r.backends().size() == 3);
  CHECK(g_loads == 1);
  CHECK_FALSE(r.deferred("late"));
  CHECK_FALSE(r.deferred("broken"));
  bool late = false;
  for (const KernelInfo& k : r.kernels("toy")) late = late || k.name == "late.toy";
  CHECK(late);
}

TEST_CASE("registry: threads asking for a deferred backend at once load it once",
          "[registry][concurrency]") {
  const Registry r = deferred_registry();
  const OpId toy = r.op_id("toy");
  const BackendId host = r.resolve_backend("toy", "host", Device::cpu());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 200; ++k) {
        if (i % 2 == 0) {  // dispatch on the host while the load runs
          if (r.find(toy, host, DType::f32, ToyArgs{}).info->name != "host.toy") ++wrong;
        } else {
          const BackendId b = r.resolve_backend("toy", "late", Device::cuda());
          if (r.find(toy, b, DType::f32, ToyArgs{}).info->name != "late.toy") ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(wrong == 0);
  CHECK(g_loads == 1);
}
