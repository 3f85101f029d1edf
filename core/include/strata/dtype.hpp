#pragma once
// Element types. f16/bf16 are storage types with software conversion on the
// host; arithmetic on them happens in f32 (or on CUDA tensor cores).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

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

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::f64;
};
template <>
struct dtype_of<half> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::boolean;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::i64;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Reads one element of type dt at p as double / writes double v as dt at p.
double load_as_double(const void* p, DType dt);
void store_from_double(void* p, DType dt, double v);

}  // namespace strata
