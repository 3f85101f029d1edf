// Counter-based random numbers (strata/detail/counter_rng.hpp): value i of
// seed s is a pure function of (s, i), generated on the host in logical
// row-major order and then copied to the target device, so every backend and
// platform sees the same tensor.
#include <cmath>
#include <numbers>

#include "strata/detail/counter_rng.hpp"
#include "strata/tensor.hpp"

namespace strata {

namespace {

using detail::random_bits;

// Uniform [0, 1) with as many bits as `dt` holds exactly, so rounding to the
// dtype can never produce 1.0 (bool: 0 or 1 with equal odds).
double uniform(std::uint64_t bits, DType dt) {
  switch (dt) {
    case DType::f64:
      return static_cast<double>(bits >> 11) * 0x1p-53;
    case DType::f16:
      return static_cast<double>(bits >> 53) * 0x1p-11;
    case DType::bf16:
      return static_cast<double>(bits >> 56) * 0x1p-8;
    case DType::boolean:
      return static_cast<double>(bits >> 63);  // a fair coin
    case DType::f32:
    case DType::i32:  // integer tensors truncate the f32-grade value (rand: 0)
    case DType::i64:
      break;
  }
  return static_cast<double>(bits >> 40) * 0x1p-24;
}

template <class F>
Tensor generate(const Shape& shape, DType dt, Device dev, F&& value_at) {
  Tensor host = Tensor::empty(shape, dt, Device::cpu());
  char* p = static_cast<char*>(host.data_ptr());
  const std::size_t isz = itemsize(dt);
  const auto n = static_cast<std::uint64_t>(host.numel());
  for (std::uint64_t i = 0; i < n; ++i) store_from_double(p + i * isz, dt, value_at(i));
  return host.to(dev);
}

}  // namespace

Tensor Tensor::rand(const Shape& shape, std::uint64_t seed, DType dt, Device dev) {
  return generate(shape, dt, dev,
                  [&](std::uint64_t i) { return uniform(random_bits(seed, i), dt); });
}

// Box-Muller over counters 2i and 2i+1; 1 - u keeps the log argument in (0, 1].
Tensor Tensor::randn(const Shape& shape, std::uint64_t seed, DType dt, Device dev) {
  STRATA_CHECK(dt != DType::boolean, "Tensor::randn", "dtype bool has no normal distribution");
  return generate(shape, dt, dev, [&](std::uint64_t i) {
    const double u1 = static_cast<double>(random_bits(seed, 2 * i) >> 11) * 0x1p-53;
    const double u2 = static_cast<double>(random_bits(seed, 2 * i + 1) >> 11) * 0x1p-53;
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
  });
}

}  // namespace strata
