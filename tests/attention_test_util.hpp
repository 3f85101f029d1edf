#pragma once
// Small helpers shared by the tests/test_attention_*.cpp files.
#include <cmath>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

namespace strata::test {

// Backends that can run here, with the device their tensors must be on.
struct RunnableBackend {
  std::string name;
  Device device;
};
inline std::vector<RunnableBackend> runnable_backends() {
  std::vector<RunnableBackend> r;
  for (const BackendInfo& b : Registry::get().backends()) {
    if (!b.compiled || !b.available) continue;
    r.push_back({b.name, b.device == DeviceType::cpu ? Device::cpu() : Device{b.device, 0}});
  }
  return r;
}

// Checks every element of `got` against `want` (row-major), with NaN == NaN
// and inf == inf of the same sign.
inline void require_close(const std::vector<double>& got, const std::vector<double>& want,
                          double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << " got " << got[i] << " want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])));
    }
  }
}

inline double tol_for(DType dt) { return dt == DType::f32 ? 2e-6 : 1e-13; }

}  // namespace strata::test
