#pragma once
// Shared by the row-op front ends (reduce.cpp, norm.cpp, embedding.cpp,
// rotary.cpp): the op's dim moved last as a view, and the registry call
// every row op ends with.
#include <initializer_list>

#include "strata/detail/iter.hpp"
#include "strata/detail/op_checks.hpp"
#include "strata/op_options.hpp"
#include "strata/registry.hpp"

namespace strata::detail {

// `t` with dim `d` swapped with the last one (a view); a 0-d tensor as it is.
inline Tensor dim_last(const Tensor& t, int d) {
  return t.dim() <= 1 ? t : t.transpose(d, t.dim() - 1);
}

// Finds the kernel (so that an unsupported call fails before the empty
// shortcut, as elementwise does) and runs it unless the output is empty.
inline void run_row_kernel(OpId id, BackendId be, DType key, IterArgs& it, const Tensor& out,
                           const OpOptions& opt) {
  it.stream = opt.stream;
  const auto k = Registry::get().find(id, be, key, it);
  if (out.numel() == 0) return;
  k.run(it);
}

// An embedding table (or its gradient) named `name`: defined, floating, [V, D].
inline void check_embedding_table(const char* op, const Tensor& t, const char* name) {
  check_defined(op, t, name);
  check_floating(op, t, name);
  STRATA_CHECK(t.dim() == 2, op, name, " has shape ", shape_str(t.shape()), " but must be [V, D]");
}

}  // namespace strata::detail
