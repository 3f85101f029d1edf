#pragma once
// The counter-based generator behind Tensor::rand / randn and dropout's
// mask: value i of seed s is a pure function of (s, i), so any backend can
// compute any element on its own and every backend sees the same stream.
// Plain constexpr integer code with no headers beyond <cstdint>: device
// code calls it too (nvcc's --expt-relaxed-constexpr).
#include <cstdint>

namespace strata::detail {

// splitmix64's finaliser: a bijective 64-bit mixer with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline constexpr std::uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// The i-th output of splitmix64 started from a scrambled seed, so nearby seeds
// give unrelated streams rather than shifted copies of one.
constexpr std::uint64_t random_bits(std::uint64_t seed, std::uint64_t i) {
  return mix64(mix64(seed + kGolden) + (i + 1) * kGolden);
}

}  // namespace strata::detail
