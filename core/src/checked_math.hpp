#pragma once
// int64 arithmetic that throws strata::Error instead of wrapping: shapes,
// strides and offsets come from users, and a wrapped extent would let a view
// reach outside its storage.
#include <cstdint>

#include "strata/error.hpp"

namespace strata::detail {

inline bool mul_ok(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}
inline bool add_ok(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

template <class... Args>
std::int64_t mul_or_fail(std::int64_t a, std::int64_t b, const char* op, Args&&... why) {
  std::int64_t r;
  if (!mul_ok(a, b, &r)) fail(op, "int64 overflow computing ", a, " * ", b, why...);
  return r;
}

template <class... Args>
std::int64_t add_or_fail(std::int64_t a, std::int64_t b, const char* op, Args&&... why) {
  std::int64_t r;
  if (!add_ok(a, b, &r)) fail(op, "int64 overflow computing ", a, " + ", b, why...);
  return r;
}

}  // namespace strata::detail
