#pragma once
// int64 arithmetic that throws strata::Error instead of wrapping: shapes,
// strides and offsets come from users, and a wrapped extent would let a view
// reach outside its storage.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "strata/error.hpp"

namespace strata::detail {

inline bool mul_ok(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool add_ok(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// A message part that is a callable is called only on failure, so hot
// paths can name a shape without formatting it on every call.
template <class T>
decltype(auto) message_part(T&& x) {
  if constexpr (std::is_invocable_v<T>) {
    return x();
  } else {
    return std::forward<T>(x);
  }
}

template <class... Args>
std::int64_t mul_or_fail(std::int64_t a, std::int64_t b, const char* op, Args&&... why) {
  std::int64_t r;
  if (!mul_ok(a, b, &r)) fail(op, "int64 overflow computing ", a, " * ", b, message_part(why)...);
  return r;
}

template <class... Args>
std::int64_t add_or_fail(std::int64_t a, std::int64_t b, const char* op, Args&&... why) {
  std::int64_t r;
  if (!add_ok(a, b, &r)) fail(op, "int64 overflow computing ", a, " + ", b, message_part(why)...);
  return r;
}

}  // namespace strata::detail
