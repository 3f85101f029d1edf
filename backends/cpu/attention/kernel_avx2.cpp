// AVX2 + FMA (x86-64 since Haswell / Zen): 256-bit vectors, 6 x 16 f32
// register tiles (12 accumulators of 16 ymm registers).
#include <cstddef>
#include <cstdint>

#include "cpu/attention/cpu_kernels.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)  // clang has no GCC target pragma; same effect
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
namespace strata::cpu {
namespace {
#include "cpu/attention/simd.hpp"
//
#include "cpu/attention/kernel_impl.hpp"

using F = Cfg<float, 8, 6, 2, 64, 192, 4, 128>;
using D = Cfg<double, 4, 6, 2, 64, 192, 4, 128>;
}  // namespace
}  // namespace strata::cpu
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace strata::cpu {
const IsaKernels* kernels_avx2() {
  static const IsaKernels k = STRATA_CPU_ISA_TABLE("avx2", F, D);
  return &k;
}
}  // namespace strata::cpu
#else
namespace strata::cpu {
const IsaKernels* kernels_avx2() { return nullptr; }
}  // namespace strata::cpu
#endif
