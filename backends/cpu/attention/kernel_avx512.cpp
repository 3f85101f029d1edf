// AVX-512 (F, DQ, BW, VL: Skylake-X and later Xeons): 512-bit vectors,
// 12 x 32 f32 register tiles (24 accumulators of 32 zmm registers).
#include <cstddef>
#include <cstdint>

#include "cpu/attention/cpu_kernels.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#if defined(__clang__)  // clang has no GCC target pragma; same effect
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
#endif
namespace strata::cpu {
namespace {
#include "cpu/attention/simd.hpp"
//
#include "cpu/attention/kernel_impl.hpp"

using F = Cfg<float, 16, 12, 2, 64, 192, 4, 128>;
using D = Cfg<double, 8, 12, 2, 64, 192, 4, 128>;
}  // namespace
}  // namespace strata::cpu
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace strata::cpu {
const IsaKernels* kernels_avx512() {
  static const IsaKernels k = STRATA_CPU_ISA_TABLE("avx512", F, D);
  return &k;
}
}  // namespace strata::cpu
#else
namespace strata::cpu {
const IsaKernels* kernels_avx512() { return nullptr; }
}  // namespace strata::cpu
#endif
