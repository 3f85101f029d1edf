#pragma once
// Element conversions shared by the cpu and cuda engines' cast, copy_ and
// fill: float to integer truncates toward zero and saturates (NaN -> 0),
// anything to bool is x != 0 (NaN -> true), bool is 0 or 1. f16/bf16 go
// through f32. The cuda engine supplies its own f16/bf16 types and calls
// these templates with them; on the host they are strata::half/bfloat16.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/elementwise_functors.hpp"

namespace strata::fn {

template <class T>
inline constexpr bool is_int_v = std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

template <class I, class F>
STRATA_HD I saturate(F v) {
  if (v != v) return 0;  // NaN
  constexpr F lo = static_cast<F>(std::numeric_limits<I>::min());
  constexpr F hi = static_cast<F>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// Native arithmetic types (float, double, bool, int32, int64) only; the
// engines wrap f16/bf16 around these through float.
template <class To, class From>
STRATA_HD To convert_native(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return x ? To(1) : To(0);
  } else if constexpr (is_int_v<To> && !is_int_v<From>) {
    return saturate<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace strata::fn
