// Run-time choice of the instruction set: one binary, built without -march,
// runs the AVX-512 kernels on a Xeon, AVX2 on a Zen or Haswell, and the
// baseline ones anywhere else.
#include <cstdlib>
#include <cstring>

#include "cpu/attention/cpu_kernels.hpp"

namespace strata::cpu {
namespace {

int isa_rank(const char* s) {
  if (!s || !*s) return 2;
  if (std::strcmp(s, "generic") == 0) return 0;
  if (std::strcmp(s, "avx2") == 0) return 1;
  return 2;
}

const IsaKernels* best_supported(int cap) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  // libgcc's checks include the OS (XGETBV) support for the wider registers.
  if (cap >= 2 && kernels_avx512() && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma"))
    return kernels_avx512();
  if (cap >= 1 && kernels_avx2() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return kernels_avx2();
#else
  (void)cap;
#endif
  return &kernels_generic();
}

}  // namespace

const IsaKernels& select_kernels() {
  // Read each call (it is cheap) so tests can switch instruction sets.
  return *best_supported(isa_rank(std::getenv("STRATA_CPU_ISA")));
}

}  // namespace strata::cpu
