// The fake device runtime's single instance (see test_core_util.hpp).
#include <memory>

#include "test_core_util.hpp"

namespace core_test {

FakeRuntime* fake_runtime() {
  static FakeRuntime* const fake = []() -> FakeRuntime* {
    if (strata::device_runtime(strata::DeviceType::cuda) != nullptr) return nullptr;
    auto rt = std::make_unique<FakeRuntime>();
    FakeRuntime* p = rt.get();
    p->retired = true;
    strata::install_device_runtime(std::move(rt));
    return p;
  }();
  return fake;
}

}  // namespace core_test
