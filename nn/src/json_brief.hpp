#pragma once
// A JSON value as an error message may quote it, for the config.json and
// safetensors readers. nlohmann's dump() and operator== recurse once per
// nesting level, so quoting a value nested ~100,000 deep (a 200 KB file)
// overflowed the stack; these never recurse and stay short however large
// the value is.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>

namespace strata::nn::detail {

inline constexpr std::size_t kBriefBytes = 64;

// A string from a file as a message quotes it: its first 64 bytes, then
// "..." when it is longer.
inline std::string text_brief(const std::string& s) {
  return s.size() <= kBriefBytes ? s : s.substr(0, kBriefBytes) + "...";
}

// Scalars as JSON text (strings cut to 64 bytes, any cut UTF-8 sequence
// replaced); an array or object of at most 8 scalars as JSON text too;
// larger or nested ones by kind and size ("a JSON array of 3 elements").
inline std::string json_brief(const nlohmann::json& v) {
  constexpr std::size_t kMaxString = kBriefBytes, kMaxItems = 8;
  const auto text = [](const nlohmann::json& x) {
    return x.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return s.size() <= kMaxString ? text(v) : text(nlohmann::json(s.substr(0, kMaxString))) + "...";
  }
  if (!v.is_structured()) return text(v);
  const auto long_string = [&](const nlohmann::json& x) {
    return x.is_string() && x.get_ref<const std::string&>().size() > kMaxString;
  };
  bool flat = v.size() <= kMaxItems;
  for (auto it = v.begin(); flat && it != v.end(); ++it)
    flat = !it->is_structured() && !long_string(*it) &&
           (v.is_array() || it.key().size() <= kMaxString);
  if (flat) return text(v);
  return std::string("a JSON ") + v.type_name() + " of " + std::to_string(v.size()) +
         (v.is_array() ? (v.size() == 1 ? " element" : " elements")
                       : (v.size() == 1 ? " key" : " keys"));
}

}  // namespace strata::nn::detail
