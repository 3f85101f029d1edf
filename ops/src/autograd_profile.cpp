// Tape::profile_backward's timing (autograd_profile.hpp).
#include "autograd_profile.hpp"

#include <algorithm>

#include "strata/device_runtime.hpp"

namespace strata::autograd {

void BackwardProfile::sync() const {
  if (dev_.type == DeviceType::cpu) return;
  if (DeviceRuntime* rt = device_runtime(dev_.type)) rt->synchronize(dev_.index);
}

std::vector<OpTime> BackwardProfile::report() const {
  std::vector<OpTime> out;
  for (const auto& [op, t] : by_op_) out.push_back({op, t.ms, t.calls});
  std::sort(out.begin(), out.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  return out;
}

}  // namespace strata::autograd
