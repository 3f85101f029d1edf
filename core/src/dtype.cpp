#include "strata/dtype.hpp"

#include <cfloat>
#include <cmath>
#include <limits>

#include "strata/detail/enum_names.hpp"
#include "strata/error.hpp"

namespace strata {

namespace {

std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds `value` (an integer scaled by 2^shift) right by `shift` bits, to
// nearest with ties to even.
std::uint32_t round_shift_rne(std::uint32_t value, unsigned shift) {
  const std::uint32_t kept = value >> shift;
  const std::uint32_t rem = value & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  return kept + ((rem > halfway || (rem == halfway && (kept & 1u))) ? 1u : 0u);
}

// double -> float without the undefined behaviour of casting an out-of-range
// finite double: beyond FLT_MAX + half an ulp it rounds to infinity.
float to_float(double v) {
  if (std::isfinite(v) && std::fabs(v) > FLT_MAX) {
    constexpr double kOverflow = 0x1.ffffffp127;  // FLT_MAX + half ulp: ties to even = inf
    if (std::fabs(v) >= kOverflow) return std::signbit(v) ? -INFINITY : INFINITY;
    return std::signbit(v) ? -FLT_MAX : FLT_MAX;
  }
  return static_cast<float>(v);
}

// Rounds a double straight to a narrow IEEE-style binary format with `man`
// mantissa bits and `ebits` exponent bits (ties to even), returning its bit
// pattern. Going through float first would round twice: 1 + 2^-11 + 2^-30
// becomes a tie in float and then rounds the wrong way.
std::uint16_t narrow_from_double(double v, unsigned man, unsigned ebits) {
  std::uint64_t x;
  std::memcpy(&x, &v, sizeof x);
  const auto sign = static_cast<std::uint32_t>(x >> 63) << (man + ebits);
  const auto exp = static_cast<int>((x >> 52) & 0x7ff);
  const std::uint64_t mant = x & ((std::uint64_t{1} << 52) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  const std::uint32_t inf = ((1u << ebits) - 1u) << man;
  if (exp == 0x7ff) {  // inf, or a NaN kept quiet with its top payload bits
    const auto payload = static_cast<std::uint32_t>(mant >> (52 - man));
    return static_cast<std::uint16_t>(sign | inf | (mant ? (1u << (man - 1)) | payload : 0u));
  }
  const int e = exp - 1023;
  if (exp == 0 || e < -bias - static_cast<int>(man)) return static_cast<std::uint16_t>(sign);
  if (e > bias) return static_cast<std::uint16_t>(sign | inf);
  std::uint64_t kept, rem, halfway;
  if (e >= 1 - bias) {  // normal; a carry may step into the next binade or to inf
    const std::uint64_t bits = (static_cast<std::uint64_t>(e + bias) << 52) | mant;
    const unsigned shift = 52 - man;
    kept = bits >> shift;
    rem = bits & ((std::uint64_t{1} << shift) - 1);
    halfway = std::uint64_t{1} << (shift - 1);
  } else {  // subnormal in the narrow format, counted in its smallest unit
    const std::uint64_t m = mant | (std::uint64_t{1} << 52);
    const auto shift = static_cast<unsigned>(53 - bias - static_cast<int>(man) - e);
    kept = m >> shift;
    rem = m & ((std::uint64_t{1} << shift) - 1);
    halfway = std::uint64_t{1} << (shift - 1);
  }
  kept += (rem > halfway || (rem == halfway && (kept & 1))) ? 1 : 0;
  return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(kept));
}

// Truncates toward zero like a C++ cast, but defined everywhere: NaN -> 0,
// out-of-range values -> the nearest representable integer.
template <class I>
I saturate_int(double v) {
  if (std::isnan(v)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<I>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

std::size_t itemsize(DType dt) {
  switch (dt) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::boolean:
      return 1;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
  }
  fail("itemsize", "invalid dtype value ", static_cast<int>(dt));
}

std::string_view dtype_name(DType dt) {
  static constexpr std::string_view kNames[] = {"f32",  "f64", "f16", "bf16",
                                                "bool", "i32", "i64"};  // declaration order
  return strata::detail::enum_name(dt, kNames, "invalid");
}

DType parse_dtype(std::string_view s) {
  if (s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f64" || s == "float64" || s == "double") return DType::f64;
  if (s == "f16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "bool" || s == "boolean") return DType::boolean;
  if (s == "i32" || s == "int32") return DType::i32;
  if (s == "i64" || s == "int64") return DType::i64;
  fail("parse_dtype", "unknown dtype '", s, "' (expected f32, f64, f16, bf16, bool, i32 or i64)");
}

bool is_floating(DType dt) {
  return dt == DType::f32 || dt == DType::f64 || dt == DType::f16 || dt == DType::bf16;
}
bool is_integer(DType dt) { return dt == DType::i32 || dt == DType::i64; }

half::half(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  const std::uint32_t exp = ax >> 23;
  const std::uint32_t mant = ax & 0x7fffffu;
  if (exp == 0xff) {  // inf stays inf; NaN stays a quiet NaN with its top payload bits
    bits = static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? (0x200u | (mant >> 13)) : 0u));
  } else if (exp >= 143) {  // >= 2^16: beyond the largest finite half after rounding
    bits = static_cast<std::uint16_t>(sign | 0x7c00u);
  } else if (exp >= 113) {  // normal half; a rounding carry may step into the next binade or inf
    const std::uint32_t v = ((exp - 112u) << 23) | mant;
    bits = static_cast<std::uint16_t>(sign | round_shift_rne(v, 13));
  } else if (exp >= 102) {  // half subnormal (unit 2^-24), or rounds up to the smallest normal
    bits = static_cast<std::uint16_t>(sign | round_shift_rne(mant | 0x800000u, 126u - exp));
  } else {  // below 2^-25: rounds to zero
    bits = static_cast<std::uint16_t>(sign);
  }
}

half::operator float() const {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  const std::uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float mag = std::ldexp(static_cast<float>(mant), -24);  // exact
    return sign ? -mag : mag;
  }
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

bfloat16::bfloat16(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a quiet NaN after truncation
    bits = static_cast<std::uint16_t>((x >> 16) | 0x40u);
    return;
  }
  // Adding 0x7fff plus the kept lsb rounds to nearest even; overflow carries to inf.
  const std::uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  bits = static_cast<std::uint16_t>((x + bias) >> 16);
}

bfloat16::operator float() const { return bits_float(static_cast<std::uint32_t>(bits) << 16); }

double load_as_double(const void* p, DType dt) {
  switch (dt) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::f16: {
      half v;
      std::memcpy(&v.bits, p, sizeof v.bits);
      return static_cast<float>(v);
    }
    case DType::bf16: {
      bfloat16 v;
      std::memcpy(&v.bits, p, sizeof v.bits);
      return static_cast<float>(v);
    }
    case DType::boolean: {
      unsigned char v;
      std::memcpy(&v, p, 1);
      return v != 0 ? 1.0 : 0.0;
    }
    case DType::i32: {
      std::int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    }
    case DType::i64: {
      std::int64_t v;
      std::memcpy(&v, p, sizeof v);
      return static_cast<double>(v);
    }
  }
  fail("load_as_double", "invalid dtype value ", static_cast<int>(dt));
}

void store_from_double(void* p, DType dt, double v) {
  switch (dt) {
    case DType::f32: {
      const float f = to_float(v);
      std::memcpy(p, &f, sizeof f);
      return;
    }
    case DType::f64:
      std::memcpy(p, &v, sizeof v);
      return;
    case DType::f16: {
      const std::uint16_t b = narrow_from_double(v, 10, 5);
      std::memcpy(p, &b, sizeof b);
      return;
    }
    case DType::bf16: {
      const std::uint16_t b = narrow_from_double(v, 7, 8);
      std::memcpy(p, &b, sizeof b);
      return;
    }
    case DType::boolean: {
      const unsigned char b = v != 0.0 ? 1 : 0;  // NaN is truthy, as in C++ and NumPy
      std::memcpy(p, &b, 1);
      return;
    }
    case DType::i32: {
      const std::int32_t i = saturate_int<std::int32_t>(v);
      std::memcpy(p, &i, sizeof i);
      return;
    }
    case DType::i64: {
      const std::int64_t i = saturate_int<std::int64_t>(v);
      std::memcpy(p, &i, sizeof i);
      return;
    }
  }
  fail("store_from_double", "invalid dtype value ", static_cast<int>(dt));
}

}  // namespace strata
