#pragma once
// Registration of the cpu row kernels (rows_cpu.cpp, rows_backward_cpu.cpp):
// one kernel template, its four floating dtypes, named "cpu.rows.<op>".
#include <string>

#include "strata/dtype.hpp"
#include "strata/iter_args.hpp"
#include "strata/registry.hpp"

namespace strata::cpu::rows {

template <void (*F32)(const IterArgs&), void (*F64)(const IterArgs&), void (*F16)(const IterArgs&),
          void (*BF16)(const IterArgs&)>
void add_floating(Registry& r, const char* op) {
  const std::string name = std::string("cpu.rows.") + op;
  r.add_kernel<IterArgs>(op, "cpu", DType::f32, name, F32);
  r.add_kernel<IterArgs>(op, "cpu", DType::f64, name, F64);
  r.add_kernel<IterArgs>(op, "cpu", DType::f16, name, F16);
  r.add_kernel<IterArgs>(op, "cpu", DType::bf16, name, BF16);
}

}  // namespace strata::cpu::rows

// The four floating instantiations of `kernel` (extra template arguments after T).
#define STRATA_ROWS_ADD(r, op, kernel, ...)                                                      \
  ::strata::cpu::rows::add_floating<                                                             \
      &kernel<float __VA_OPT__(, ) __VA_ARGS__>, &kernel<double __VA_OPT__(, ) __VA_ARGS__>,     \
      &kernel<half __VA_OPT__(, ) __VA_ARGS__>, &kernel<bfloat16 __VA_OPT__(, ) __VA_ARGS__>>(r, \
                                                                                              op)
