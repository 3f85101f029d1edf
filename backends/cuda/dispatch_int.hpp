#pragma once
// A run-time int among a few compile-time choices, made a template argument:
// the launchers' switches over item sizes (runtime/strided_copy.cu) and row
// counts (matmul/matmul_gemv_multirow.cu) in one place.
#include <type_traits>

namespace strata::cuda {

// Calls f(std::integral_constant<int, N>{}) for the N of Ns that equals n and
// returns true; returns false, f not called, when n is none of them.
template <int... Ns, class F>
bool dispatch_int(int n, F&& f) {
  return ((n == Ns && (f(std::integral_constant<int, Ns>{}), true)) || ...);
}

}  // namespace strata::cuda
