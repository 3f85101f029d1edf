// dtype names and sizes, and f16/bf16 conversion against independent
// references: decoding from the IEEE formulas and rounding by searching the
// nearest representable value, ties to the even bit pattern.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "catch.hpp"
#include "strata/dtype.hpp"
#include "test_core_util.hpp"

using strata::bfloat16;
using strata::DType;
using strata::half;

namespace {

// binary16 by its definition: (-1)^s * 2^(e-15) * 1.m, or 2^-14 * 0.m.
double decode_half(std::uint16_t b) {
  const int e = (b >> 10) & 0x1f;
  const int m = b & 0x3ff;
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return (b & 0x8000) ? -mag : mag;
}

// Nearest value in `values` (the non-negative finite patterns 0..max in
// increasing order) to |x|, ties to the even pattern; `overflow` is max plus
// half an ulp, where the result becomes infinity (pattern `inf`).
std::uint16_t nearest_pattern(double x, const std::vector<double>& values, double overflow,
                              std::uint16_t inf, std::uint16_t sign_bit) {
  const std::uint16_t sign = std::signbit(x) ? sign_bit : 0;
  const double a = std::fabs(x);
  if (a >= overflow) return sign | inf;
  const auto top = static_cast<std::uint16_t>(values.size() - 1);
  if (a >= values.back()) return sign | top;  // below the overflow threshold
  const auto it = std::lower_bound(values.begin(), values.end(), a);
  const auto hi = static_cast<std::uint16_t>(it - values.begin());
  if (values[hi] == a || hi == 0) return sign | hi;
  const auto lo = static_cast<std::uint16_t>(hi - 1);
  const double dlo = a - values[lo], dhi = values[hi] - a;
  if (dlo < dhi || (dlo == dhi && (lo & 1) == 0)) return sign | lo;
  return sign | hi;
}

std::uint16_t reference_half(double x) {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (std::uint16_t b = 0; b <= 0x7bff; ++b) v.push_back(decode_half(b));
    return v;
  }();
  return nearest_pattern(x, values, 65520.0, 0x7c00, 0x8000);
}

// bfloat16 by its definition: float's sign and exponent, 7 mantissa bits.
double decode_bf16(std::uint16_t b) {
  const int e = (b >> 7) & 0xff;
  const int m = b & 0x7f;
  const double mag = e == 0 ? std::ldexp(m, -133) : std::ldexp(128 + m, e - 134);
  return (b & 0x8000) ? -mag : mag;
}

std::uint16_t reference_bf16(double x) {
  static const std::vector<double> values = [] {
    std::vector<double> v;
    for (std::uint16_t b = 0; b <= 0x7f7f; ++b) v.push_back(decode_bf16(b));
    return v;
  }();
  return nearest_pattern(x, values, std::ldexp(255.5, 120), 0x7f80, 0x8000);
}

}  // namespace

TEST_CASE("core: dtype names, sizes and parsing", "[core][dtype]") {
  CHECK(strata::itemsize(DType::f32) == 4);
  CHECK(strata::itemsize(DType::f64) == 8);
  CHECK(strata::itemsize(DType::f16) == 2);
  CHECK(strata::itemsize(DType::bf16) == 2);
  CHECK(strata::itemsize(DType::boolean) == 1);
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean})
    CHECK(strata::parse_dtype(strata::dtype_name(dt)) == dt);
  CHECK(strata::parse_dtype("float32") == DType::f32);
  CHECK(strata::parse_dtype("float64") == DType::f64);
  CHECK(strata::parse_dtype("bfloat16") == DType::bf16);
  CHECK_FALSE(strata::is_floating(DType::boolean));
  CHECK(strata::is_floating(DType::bf16));
  CORE_REQUIRE_ERROR(strata::parse_dtype("int8"), "parse_dtype", "int8");
  CORE_REQUIRE_ERROR(strata::parse_dtype(""), "parse_dtype", "''");
}

TEST_CASE("core: half known bit patterns", "[core][dtype]") {
  CHECK(half(1.0f).bits == 0x3c00);
  CHECK(half(-2.0f).bits == 0xc000);
  CHECK(half(65504.0f).bits == 0x7bff);               // largest finite
  CHECK(half(65519.99f).bits == 0x7bff);              // still rounds down
  CHECK(half(65520.0f).bits == 0x7c00);               // halfway to 2^16: ties to inf
  CHECK(half(std::ldexp(1.0f, -24)).bits == 0x0001);  // smallest subnormal
  CHECK(half(std::ldexp(1.0f, -25)).bits == 0x0000);  // half of it: tie to even 0
  CHECK(half(std::ldexp(1.5f, -25)).bits == 0x0001);
  CHECK(half(std::ldexp(3.0f, -25)).bits == 0x0002);  // 1.5 units: tie to even 2
  CHECK(half(std::ldexp(1.0f, -14)).bits == 0x0400);  // smallest normal
  CHECK(half(std::ldexp(1023.0f, -24)).bits == 0x03ff);
  CHECK(half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);      // tie: even
  CHECK(half(1.0f + 3 * std::ldexp(1.0f, -11)).bits == 0x3c02);  // tie: even
  CHECK(half(0.1f).bits == 0x2e66);
  CHECK(half(-0.0f).bits == 0x8000);
  CHECK(half(INFINITY).bits == 0x7c00);
  CHECK(half(-INFINITY).bits == 0xfc00);
  CHECK(half(1e10f).bits == 0x7c00);
  const half nan(std::numeric_limits<float>::quiet_NaN());
  CHECK((nan.bits & 0x7c00) == 0x7c00);
  CHECK((nan.bits & 0x03ff) != 0);
  CHECK(std::isnan(static_cast<float>(nan)));
  CHECK(static_cast<float>(half(65504.0f)) == 65504.0f);
  half sub;
  sub.bits = 0x0001;
  CHECK(static_cast<float>(sub) == std::ldexp(1.0f, -24));
}

TEST_CASE("core: bfloat16 known bit patterns", "[core][dtype]") {
  CHECK(bfloat16(1.0f).bits == 0x3f80);
  CHECK(bfloat16(-1.0f).bits == 0xbf80);
  CHECK(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits == 0x3f80);      // tie: even
  CHECK(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits == 0x3f82);  // tie: even
  CHECK(bfloat16(INFINITY).bits == 0x7f80);
  CHECK(bfloat16(FLT_MAX).bits == 0x7f80);  // past the largest bf16 + half ulp
  CHECK(bfloat16(std::bit_cast<float>(0x7f7f0000u)).bits == 0x7f7f);
  CHECK(bfloat16(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
  CHECK(bfloat16(std::bit_cast<float>(0x00010000u)).bits == 0x0001);  // smallest subnormal
  const bfloat16 nan(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(static_cast<float>(nan)));
  // A signalling NaN whose payload lives only in the low bits must stay NaN.
  CHECK(std::isnan(static_cast<float>(bfloat16(std::bit_cast<float>(0x7f800001u)))));
}

TEST_CASE("core: every half and bfloat16 pattern round-trips", "[core][dtype]") {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    half h;
    h.bits = static_cast<std::uint16_t>(b);
    const float f = static_cast<float>(h);
    INFO("half bits " << b);
    if (((b >> 10) & 0x1f) == 0x1f && (b & 0x3ff)) {
      REQUIRE(std::isnan(f));
      continue;
    }
    if (((b >> 10) & 0x1f) == 0x1f)
      REQUIRE(std::isinf(f));
    else
      REQUIRE(static_cast<double>(f) == decode_half(h.bits));
    REQUIRE(half(f).bits == h.bits);
    bfloat16 g;
    g.bits = static_cast<std::uint16_t>(b);
    const float gf = static_cast<float>(g);
    if (std::isnan(gf)) continue;
    if (((b >> 7) & 0xff) != 0xff) REQUIRE(static_cast<double>(gf) == decode_bf16(g.bits));
    REQUIRE(bfloat16(gf).bits == g.bits);
  }
}

TEST_CASE("core: float to half/bfloat16 rounding matches a nearest-value search", "[core][dtype]") {
  const std::uint64_t seed = 1;
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<float> xs;
  // Random bit patterns over the whole float range, and over half's range.
  for (int i = 0; i < 8000; ++i) {
    xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng())));
    xs.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(rng()) & 0x80ffffffu));  // tiny
    const auto exp = static_cast<std::uint32_t>(std::uniform_int_distribution<int>(95, 145)(rng));
    xs.push_back(
        std::bit_cast<float>((static_cast<std::uint32_t>(rng()) & 0x807fffffu) | (exp << 23)));
  }
  // Exact midpoints between neighbouring halves, and one float either side.
  for (std::uint16_t b = 0; b < 0x7bff; b = static_cast<std::uint16_t>(b + 1 + rng() % 7)) {
    const auto mid = static_cast<float>((decode_half(b) + decode_half(b + 1)) / 2);
    xs.push_back(mid);
    xs.push_back(std::nextafter(mid, 0.0f));
    xs.push_back(std::nextafter(mid, INFINITY));
    xs.push_back(-mid);
  }
  for (float x : xs) {
    if (std::isnan(x)) continue;
    INFO("x = " << x << " bits " << std::bit_cast<std::uint32_t>(x));
    REQUIRE(half(x).bits == reference_half(x));
    REQUIRE(bfloat16(x).bits == reference_bf16(x));
  }
  // store_from_double rounds doubles once, straight to the narrow format.
  std::vector<double> ds;
  for (int i = 0; i < 8000; ++i) {
    ds.push_back(std::bit_cast<double>(rng()));
    const auto exp = static_cast<std::uint64_t>(std::uniform_int_distribution<int>(880, 1040)(rng));
    ds.push_back(std::bit_cast<double>((rng() & 0x800fffffffffffffull) | (exp << 52)));
  }
  for (std::uint16_t b = 0; b < 0x7bff; b = static_cast<std::uint16_t>(b + 1 + rng() % 7)) {
    const double mid = (decode_half(b) + decode_half(b + 1)) / 2;
    ds.push_back(mid);
    ds.push_back(std::nextafter(mid, 0.0));
    ds.push_back(std::nextafter(mid, INFINITY));
  }
  for (std::uint16_t b = 0; b < 0x7f7f; b = static_cast<std::uint16_t>(b + 1 + rng() % 7)) {
    const double mid = (decode_bf16(b) + decode_bf16(b + 1)) / 2;
    ds.push_back(-mid);
    ds.push_back(std::nextafter(mid, 0.0));
    ds.push_back(std::nextafter(mid, INFINITY));
  }
  for (double x : ds) {
    if (std::isnan(x)) continue;
    INFO("double x = " << x << " bits " << std::bit_cast<std::uint64_t>(x));
    std::uint16_t got = 0;
    strata::store_from_double(&got, DType::f16, x);
    REQUIRE(got == reference_half(x));
    strata::store_from_double(&got, DType::bf16, x);
    REQUIRE(got == reference_bf16(x));
  }
}

TEST_CASE("core: load_as_double and store_from_double", "[core][dtype]") {
  unsigned char buf[8];
  const double values[] = {1.5, -3.25, 1e-3, 65504.0, 0.0};
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (double v : values) {
      INFO(strata::dtype_name(dt) << " " << v);
      strata::store_from_double(buf, dt, v);
      const double back = strata::load_as_double(buf, dt);
      const double tol = dt == DType::f16 ? 1e-3 : dt == DType::bf16 ? 8e-3 : 1e-7;
      CHECK(std::fabs(back - v) <= tol * std::fabs(v));
    }
  }
  strata::store_from_double(buf, DType::f32, 1e300);  // out of float range: inf, not UB
  CHECK(std::isinf(strata::load_as_double(buf, DType::f32)));
  strata::store_from_double(buf, DType::f32, -1e39);
  CHECK(strata::load_as_double(buf, DType::f32) == -INFINITY);
  strata::store_from_double(buf, DType::f32, static_cast<double>(FLT_MAX) * (1 + 1e-9));
  CHECK(strata::load_as_double(buf, DType::f32) == static_cast<double>(FLT_MAX));
  strata::store_from_double(buf, DType::f16, 1e6);
  CHECK(std::isinf(strata::load_as_double(buf, DType::f16)));
  strata::store_from_double(buf, DType::f16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -30));
  CHECK(strata::load_as_double(buf, DType::f16) == 1.0 + std::ldexp(1.0, -10));  // not a tie
  strata::store_from_double(buf, DType::boolean, 0.25);
  CHECK(buf[0] == 1);
  CHECK(strata::load_as_double(buf, DType::boolean) == 1.0);
  strata::store_from_double(buf, DType::boolean, 0.0);
  CHECK(buf[0] == 0);
  strata::store_from_double(buf, DType::f64, -0.0);
  CHECK(std::signbit(strata::load_as_double(buf, DType::f64)));
}
