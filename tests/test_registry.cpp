// The registry on its own: supports() fall-through in registration order,
// the reasons it reports when nothing fits, backend resolution ("auto",
// unknown, not built, unavailable, wrong device) and what it lists.
#include <string>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/registry.hpp"
#include "test_core_util.hpp"

using namespace strata;

namespace {

struct ToyArgs {
  int value = 0;
};
int g_ran = 0;
void run_small(const ToyArgs&) { g_ran = 1; }
void run_any(const ToyArgs&) { g_ran = 2; }
const char* only_small(const ToyArgs& a) { return a.value < 10 ? nullptr : "value >= 10"; }
const char* never(const ToyArgs&) { return "never fits"; }

// A registry built by hand, as register_backends() builds the real one.
Registry toy_registry() {
  Registry r;
  r.add_backend(BackendInfo{"host", DeviceType::cpu, true, true, "", "toy"});
  r.add_backend(BackendInfo{"gone", DeviceType::cpu, false, false, "not compiled in", "toy"});
  r.add_backend(BackendInfo{"busy", DeviceType::cpu, true, false, "no device", "toy"});
  r.add_backend(BackendInfo{"cuda", DeviceType::cuda, true, true, "", "toy"});
  r.add_kernel<ToyArgs>("toy", "host", DType::f32, "host.toy.small", &run_small, &only_small);
  r.add_kernel<ToyArgs>("toy", "host", DType::f32, "host.toy.any", &run_any);
  r.add_kernel<ToyArgs>("toy", "host", DType::f64, "host.toy.never", &run_any, &never);
  r.finalize();
  return r;
}

}  // namespace

TEST_CASE("registry: the first kernel whose supports() accepts the call serves it", "[registry]") {
  const Registry r = toy_registry();
  const OpId op = r.op_id("toy");
  const BackendId host = r.resolve_backend("toy", "host", Device::cpu());
  auto small = r.find(op, host, DType::f32, ToyArgs{3});
  CHECK(small.info->name == "host.toy.small");
  auto big = r.find(op, host, DType::f32, ToyArgs{30});
  CHECK(big.info->name == "host.toy.any");
  g_ran = 0;
  big.run(ToyArgs{30});
  CHECK(g_ran == 2);
}

TEST_CASE("registry: reasons when no kernel fits, and unknown dtypes", "[registry]") {
  const Registry r = toy_registry();
  const OpId op = r.op_id("toy");
  const BackendId host = r.resolve_backend("toy", "host", Device::cpu());
  CORE_REQUIRE_ERROR(r.find(op, host, DType::f64, ToyArgs{1}), "toy: backend 'host' cannot serve",
                     "host.toy.never: never fits");
  CORE_REQUIRE_ERROR(r.find(op, host, DType::bf16, ToyArgs{1}),
                     "toy: backend 'host' has no kernel for dtype bf16");
  CORE_REQUIRE_ERROR(r.op_id("nope"), "nope: no backend registers a kernel");
}

TEST_CASE("registry: backend resolution", "[registry]") {
  const Registry r = toy_registry();
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "tpu", Device::cpu()), "toy: unknown backend 'tpu'",
                     "known: auto, host, gone, busy, cuda");
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "gone", Device::cpu()),
                     "backend 'gone' is not built into this library: not compiled in");
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "busy", Device::cpu()),
                     "backend 'busy' is not available: no device");
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "cuda", Device::cpu()),
                     "backend 'cuda' runs on cuda tensors but the inputs are on cpu");
  CHECK(r.backend(r.resolve_backend("toy", "auto", Device::cuda())).name == "cuda");
  // "auto" on the host: no cpu backend here, so the reference is wanted and absent.
  CORE_REQUIRE_ERROR(r.resolve_backend("toy", "auto", Device::cpu()), "no backend serves cpu");
}

TEST_CASE("registry: a kernel with another argument type for the same op is refused",
          "[registry]") {
  Registry r;
  r.add_backend(BackendInfo{"host", DeviceType::cpu, true, true, "", "toy"});
  r.add_kernel<ToyArgs>("toy", "host", DType::f32, "a", &run_small);
  struct Other {};
  CORE_REQUIRE_ERROR(r.add_kernel<Other>("toy", "host", DType::f64, "b",
                                         static_cast<void (*)(const Other&)>(nullptr)),
                     "kernel 'b' takes another argument type than 'a'");
  CORE_REQUIRE_ERROR(r.add_kernel<ToyArgs>("toy", "nowhere", DType::f32, "c", &run_small),
                     "names unknown backend 'nowhere'");
}

TEST_CASE("registry: the real registry lists every op on reference and cpu", "[registry]") {
  const Registry& r = Registry::get();
  for (const char* op :
       {"softmax_attention", "add", "mul_scalar", "gelu", "where", "cast", "fill"}) {
    INFO(op);
    bool ref = false, cpu = false;
    for (const KernelInfo& k : r.kernels(op)) {
      ref = ref || k.backend == "reference";
      cpu = cpu || k.backend == "cpu";
    }
    CHECK(ref);
    CHECK(cpu);
  }
  const auto ops = r.ops();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  CHECK(r.backend(r.resolve_backend("x", "auto", Device::cpu())).name == "cpu");
}
