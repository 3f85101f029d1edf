// Hooks for tests/test_attention_cpu_kernel.cpp: the fast exp2 of each
// instruction set, so its error bound can be checked against std::exp2.
// Not part of the public headers; the test declares these itself.
#include <cstdint>
#include <cstring>

#include "cpu/attention/cpu_kernels.hpp"

namespace strata::cpu {

// Fills y[i] = fast 2^x[i] with the kernels of `isa` ("generic", "avx2",
// "avx512") and returns true, or returns false when this machine or build
// cannot run that instruction set.
bool fast_exp2_for_test(const char* isa, const float* x, float* y, std::int64_t n);
bool fast_exp2_for_test(const char* isa, const double* x, double* y, std::int64_t n);

namespace {
const IsaKernels* find_isa(const char* isa) {
  const IsaKernels& best = widest_kernels();
  if (std::strcmp(isa, "generic") == 0) return &kernels_generic();
  // Only instruction sets no wider than the best this machine runs.
  for (const IsaKernels* k : {kernels_avx512(), kernels_avx2()}) {
    if (!k || std::strcmp(k->name, isa) != 0) continue;
    const bool runnable = k == &best || (k == kernels_avx2() && &best == kernels_avx512());
    return runnable ? k : nullptr;
  }
  return nullptr;
}
}  // namespace

bool fast_exp2_for_test(const char* isa, const float* x, float* y, std::int64_t n) {
  const IsaKernels* k = find_isa(isa);
  if (!k) return false;
  k->exp2_f32(x, y, n);
  return true;
}

bool fast_exp2_for_test(const char* isa, const double* x, double* y, std::int64_t n) {
  const IsaKernels* k = find_isa(isa);
  if (!k) return false;
  k->exp2_f64(x, y, n);
  return true;
}

}  // namespace strata::cpu
