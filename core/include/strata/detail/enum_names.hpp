#pragma once
// The name of an enumerator, from a table of names listed in the enum's
// declaration order: one line per enum instead of a switch with two lines
// per enumerator. A value past the table (a cast from a bad integer) gets
// `unknown`.
#include <cstddef>
#include <string_view>

namespace strata::detail {

template <class Enum, std::size_t N>
constexpr std::string_view enum_name(Enum e, const std::string_view (&names)[N],
                                     std::string_view unknown = "?") {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : unknown;
}

}  // namespace strata::detail
