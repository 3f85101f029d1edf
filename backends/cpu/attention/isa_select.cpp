// Run-time choice of the instruction set: one binary, built without -march,
// runs the AVX-512 kernels on a Xeon, AVX2 on a Zen or Haswell, and the
// baseline ones anywhere else.
#include <atomic>
#include <cstring>
#include <string>

#include "cpu/attention/cpu_kernels.hpp"
#include "strata/tuning.hpp"

namespace strata::cpu {
namespace {

// The cap cap_isa_for_test set, or -1 for none.
std::atomic<int> g_test_cap{-1};

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
  static const int cap = isa_rank(tuning().cpu_isa.c_str());
  const int test_cap = g_test_cap.load(std::memory_order_relaxed);
  return *best_supported(test_cap >= 0 ? test_cap : cap);
}

const IsaKernels& widest_kernels() { return *best_supported(2); }

void cap_isa_for_test(const char* isa) {
  g_test_cap.store(isa != nullptr ? isa_rank(isa) : -1, std::memory_order_relaxed);
}

}  // namespace strata::cpu
