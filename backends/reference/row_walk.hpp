#pragma once
// The reference row kernels' walk over the rows of a row IterArgs
// (docs/guide/ops.md, "Row ops"): a plain odometer over the outer dims, in
// order.
#include <cstdint>

#include "strata/iter_args.hpp"

namespace strata::reference {

// The element offsets of one row of every operand, and how to step along it.
struct Row {
  std::int64_t off[kMaxOperands];
  std::int64_t step[kMaxOperands];
  std::int64_t n;
  std::int64_t at(int k, std::int64_t j) const { return off[k] + j * step[k]; }
};

// Calls body(row) for every row, in order; the outer dims are every dim
// but the last.
template <class Body>
void for_each_row(const IterArgs& a, Body body) {
  const int last = a.ndim - 1;
  std::int64_t rows = 1;
  for (int d = 0; d < last; ++d) rows *= a.shape[d];
  std::int64_t idx[kMaxDims] = {};
  Row row{};
  row.n = a.shape[last];
  for (int k = 0; k < a.nops; ++k) row.step[k] = a.op[k].strides[last];
  for (std::int64_t r = 0; r < rows; ++r) {
    body(static_cast<const Row&>(row));
    for (int d = last - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < a.nops; ++k) row.off[k] += a.op[k].strides[d];
      if (idx[d] < a.shape[d]) break;
      for (int k = 0; k < a.nops; ++k) row.off[k] -= a.op[k].strides[d] * a.shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace strata::reference
