#pragma once
// What the op tests share beside ops_test_util.hpp: the backends that can run
// here, and the check that bad input is refused before anything is written.
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

namespace ops_test {

// A backend compiled in and available here, and the device of its tensors.
struct Backend {
  std::string name;
  strata::Device dev;
};
inline std::vector<Backend> backends() {
  std::vector<Backend> v;
  for (const strata::BackendInfo& b : strata::Registry::get().backends())
    if (b.compiled && b.available)
      v.push_back({b.name, b.device == strata::DeviceType::cpu ? strata::Device::cpu()
                                                               : strata::Device::cuda(0)});
  return v;
}

// Runs f, which must throw a strata::Error starting with "<op>: " and naming
// every part; each tensor of `outs` (filled by the caller) must then hold
// exactly what it held before.
inline void require_error(const char* op, const std::vector<std::string>& parts,
                          const std::function<void()>& f,
                          std::initializer_list<const strata::Tensor*> outs) {
  std::vector<std::vector<double>> before;
  for (const strata::Tensor* t : outs) before.push_back(t->to_vector<double>());
  const std::string msg = core_test::error_of(f);
  INFO("message: " << msg);
  REQUIRE(msg != "<no error>");
  CHECK(msg.rfind(std::string(op) + ": ", 0) == 0);
  for (const std::string& p : parts) {
    INFO("expected part: " << p);
    CHECK(msg.find(p) != std::string::npos);
  }
  std::size_t k = 0;
  for (const strata::Tensor* t : outs) REQUIRE(t->to_vector<double>() == before[k++]);
}

inline void require_error(const char* op, const std::vector<std::string>& parts,
                          const std::function<void()>& f, const strata::Tensor& out) {
  require_error(op, parts, f, {&out});
}

}  // namespace ops_test
