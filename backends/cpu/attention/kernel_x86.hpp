// The body of kernel_avx2.cpp and kernel_avx512.cpp: kernel_impl.hpp
// compiled for one x86-64 instruction set, and its table. No include guard
// on purpose. The including file defines, then includes this and nothing
// else:
//   STRATA_ISA         the set's name, an identifier: avx2 gives kernels_avx2()
//                      and the table name "avx2"
//   STRATA_ISA_TARGET  the GCC target string, e.g. "avx2,fma"
//   STRATA_ISA_F32_W   f32 lanes per vector (f64 gets half as many)
//   STRATA_ISA_MR      rows of the register tile (Cfg's MR)
// On other targets kernels_<isa>() returns null.
#include <cstddef>
#include <cstdint>

#include "cpu/attention/cpu_kernels.hpp"

#define STRATA_ISA_CAT2(a, b) a##b
#define STRATA_ISA_CAT(a, b) STRATA_ISA_CAT2(a, b)
#define STRATA_ISA_STR2(x) #x
#define STRATA_ISA_STR(x) STRATA_ISA_STR2(x)
#define STRATA_ISA_FN STRATA_ISA_CAT(kernels_, STRATA_ISA)

#if defined(__x86_64__) && defined(__GNUC__)
// _Pragma stringizes its operand unexpanded: one more level expands the target.
#define STRATA_ISA_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)  // clang has no GCC target pragma; same effect
#define STRATA_ISA_PUSH(t) \
  STRATA_ISA_PRAGMA(clang attribute push(__attribute__((target(t))), apply_to = function))
STRATA_ISA_PUSH(STRATA_ISA_TARGET)
#else
#define STRATA_ISA_PUSH(t) STRATA_ISA_PRAGMA(GCC target(t))
#pragma GCC push_options
STRATA_ISA_PUSH(STRATA_ISA_TARGET)
#endif
namespace strata::cpu {
namespace {
#include "cpu/attention/simd.hpp"
//
#include "cpu/attention/kernel_impl.hpp"

using F = Cfg<float, STRATA_ISA_F32_W, STRATA_ISA_MR, 2, 64, 192, 4, 128>;
using D = Cfg<double, STRATA_ISA_F32_W / 2, STRATA_ISA_MR, 2, 64, 192, 4, 128>;
}  // namespace
}  // namespace strata::cpu
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace strata::cpu {
const IsaKernels* STRATA_ISA_FN() {
  static const IsaKernels k = STRATA_CPU_ISA_TABLE(STRATA_ISA_STR(STRATA_ISA), F, D);
  return &k;
}
}  // namespace strata::cpu
#else
namespace strata::cpu {
const IsaKernels* STRATA_ISA_FN() { return nullptr; }
}  // namespace strata::cpu
#endif
