#pragma once
// The per-element rules of tril / triu, dropout and topk, once, for the cpu
// and cuda kernels (the reference backend writes its own, so that a wrong
// rule here shows up as a mismatch). Host and device code share every line.
#include <cstdint>
#include <cstring>

#include "common/elementwise_functors.hpp"
#include "strata/detail/counter_rng.hpp"

namespace strata::fn {

// tril keeps element (row, col) of a matrix when col - row <= diagonal,
// triu when col - row >= diagonal.
STRATA_HD bool tri_keeps(bool upper, std::int64_t row, std::int64_t col, std::int64_t diagonal) {
  return upper ? col - row >= diagonal : col - row <= diagonal;
}

// Dropout drops element e when u = (random_bits(seed, e) >> 11) * 2^-53 < p,
// that is when the 53-bit integer is below ceil(p * 2^53) (p * 2^53 is exact:
// a power-of-two scaling), compared in integers on every backend.
STRATA_HD std::uint64_t dropout_threshold(double p) {
  const double t = p * 9007199254740992.0;  // 2^53
  const auto f = static_cast<std::uint64_t>(t);
  return static_cast<double>(f) < t ? f + 1 : f;
}
STRATA_HD bool dropout_keeps(std::uint64_t seed, std::uint64_t e, std::uint64_t threshold) {
  return (detail::random_bits(seed, e) >> 11) >= threshold;
}

// topk's order as an unsigned key: a larger value has a larger key, -0 and
// +0 the same one, every NaN the largest of all; for the smallest, the
// complement. Ties (equal keys) go to the lower index.
STRATA_HD std::uint64_t topk_key(double v, bool largest) {
  std::uint64_t k = ~std::uint64_t(0);
  if (v == v) {
    const double z = v == 0.0 ? 0.0 : v;  // -0 -> +0
    std::uint64_t u = 0;
#if defined(__CUDA_ARCH__)
    u = static_cast<std::uint64_t>(__double_as_longlong(z));
#else
    std::memcpy(&u, &z, sizeof u);
#endif
    k = u >> 63 ? ~u : u | (std::uint64_t(1) << 63);
  }
  return largest ? k : ~k;
}

}  // namespace strata::fn
