#pragma once
// Where a buffer lives. Core knows device *kinds*; what a kind can do is
// supplied at run time by a DeviceRuntime (see device_runtime.hpp).
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

enum class DeviceType : std::uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::cpu, 0}; }
  static constexpr Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  std::string str() const;  // "cpu", "cuda:0"
  // Parses "cpu", "cuda", "cuda:N"; throws strata::Error otherwise.
  static Device parse(std::string_view s);
  friend bool operator==(const Device&, const Device&) = default;
};

std::string_view device_type_name(DeviceType t);

}  // namespace strata
