// Baseline instruction set (SSE2 on x86-64, whatever the compiler targets
// elsewhere): 128-bit vectors. Serves any CPU the others cannot.
#include <cstddef>
#include <cstdint>

#include "cpu/attention/cpu_kernels.hpp"

namespace strata::cpu {
namespace {
#include "cpu/attention/simd.hpp"
//
#include "cpu/attention/kernel_impl.hpp"

using F = Cfg<float, 4, 6, 2, 64, 192, 4, 128>;
using D = Cfg<double, 2, 6, 2, 64, 192, 4, 128>;
}  // namespace

const IsaKernels& kernels_generic() {
  static const IsaKernels k = STRATA_CPU_ISA_TABLE("generic", F, D);
  return k;
}

}  // namespace strata::cpu
