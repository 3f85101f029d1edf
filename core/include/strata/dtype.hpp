#pragma once
// Element types. f16/bf16 are storage types with software conversion on the
// host; arithmetic on them happens in f32 (or on CUDA tensor cores).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace strata {

// i32/i64 hold token ids and argmax results; they convert to and from
// double exactly up to 2^53.
enum class DType : std::uint8_t { f32, f64, f16, bf16, boolean, i32, i64 };
inline constexpr int kNumDTypes = 7;

std::size_t itemsize(DType dt);
std::string_view dtype_name(DType dt);
// Parses "f32", "float32", "f64", "float64", "f16", "bf16", "bool", "i32",
// "int32", "i64", "int64".
DType parse_dtype(std::string_view s);
bool is_floating(DType dt);  // f32, f64, f16, bf16
bool is_integer(DType dt);   // i32, i64

// IEEE binary16, round-to-nearest-even conversion.
struct half {
  std::uint16_t bits = 0;
  half() = default;
  explicit half(float f);
  explicit operator float() const;
};

// bfloat16, round-to-nearest-even conversion.
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f);
  explicit operator float() const;
};

// The C++ type of each DType, in the enum's order: dtype_of<T> is T's place
// in this list, and a type not in it has no DType (a compile error).
using DTypeCppTypes = std::tuple<float, double, half, bfloat16, bool, std::int32_t, std::int64_t>;
static_assert(std::tuple_size_v<DTypeCppTypes> == kNumDTypes);

namespace detail {
template <class T, class... Ts>
constexpr int type_index(const std::tuple<Ts...>*) {
  constexpr bool match[] = {std::is_same_v<T, Ts>...};
  for (int i = 0; i < static_cast<int>(sizeof...(Ts)); ++i)
    if (match[i]) return i;
  return -1;
}
}  // namespace detail

template <class T>
struct dtype_of {
  static constexpr int index = detail::type_index<T>(static_cast<const DTypeCppTypes*>(nullptr));
  static_assert(index >= 0, "dtype_of: no DType for this C++ type");
  static constexpr DType value = static_cast<DType>(index);
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Reads one element of type dt at p as double / writes double v as dt at p.
double load_as_double(const void* p, DType dt);
void store_from_double(void* p, DType dt, double v);

}  // namespace strata
