#pragma once
// Builders of IterArgs (strata/iter_args.hpp) for elementwise and row ops:
// broadcast, stride-0 expansion, dim ordering and merging. Validation of
// dtypes and overlap stays with the caller (op_checks.hpp).
#include <initializer_list>

#include "strata/detail/op_checks.hpp"
#include "strata/iter_args.hpp"
#include "strata/tensor.hpp"

namespace strata::detail {

// NumPy broadcast of every defined tensor's shape; the error names the two
// arguments that disagree and their shapes.
Shape broadcast_all(const char* op, std::initializer_list<Named> ts);
// Throws unless `t` broadcasts to `shape` (the output's shape).
void check_broadcasts_to(const char* op, const Tensor& t, const char* name, const Shape& shape);

// out first, then the inputs (each broadcast to out's shape; an undefined
// input becomes an absent operand). The caller has checked shapes, dtypes,
// devices and overlap.
IterArgs make_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs);
// As make_iter, but in out's logical order: no dim is reordered or flipped
// (size-1 dims are dropped and neighbours every operand walks as one are
// merged), so the row-major linear index over the IterArgs' shape is each
// element's index in out's row-major order. For kernels whose result
// depends on that index (dropout's counter, tril's row and column).
IterArgs make_ordered_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs);
// As make_iter, but the last dim of out (and of every input, after
// broadcasting to out's shape) is a row kept whole.
IterArgs make_row_iter(const Tensor& out, std::initializer_list<const Tensor*> inputs);

}  // namespace strata::detail
