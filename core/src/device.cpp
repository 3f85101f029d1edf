#include "strata/device.hpp"

#include <charconv>

#include "strata/detail/enum_names.hpp"
#include "strata/error.hpp"

namespace strata {

std::string_view device_type_name(DeviceType t) {
  static constexpr std::string_view kNames[] = {"cpu", "cuda"};  // declaration order
  return strata::detail::enum_name(t, kNames, "invalid");
}

std::string Device::str() const {
  if (type == DeviceType::cpu) return "cpu";
  return std::string(device_type_name(type)) + ":" + std::to_string(index);
}

Device Device::parse(std::string_view s) {
  if (s == "cpu" || s == "cpu:0") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  constexpr std::string_view kCuda = "cuda:";
  if (s.substr(0, kCuda.size()) == kCuda) {
    const std::string_view num = s.substr(kCuda.size());
    int idx = -1;
    const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
    if (!num.empty() && ec == std::errc() && end == num.data() + num.size() && idx >= 0)
      return Device::cuda(idx);
  }
  fail("Device::parse", "unknown device '", s, "' (expected cpu, cuda or cuda:N)");
}

}  // namespace strata
