#pragma once
// Internal to the harness: the families of op descriptors that make up
// op_catalog(), one function per op family (op_catalog_*.cpp).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "strata/op_harness.hpp"

namespace strata::harness::detail {

void add_elementwise_descriptors(std::vector<OpDescriptor>& out);
void add_row_descriptors(std::vector<OpDescriptor>& out);
void add_matmul_descriptors(std::vector<OpDescriptor>& out);
void add_select_descriptors(std::vector<OpDescriptor>& out);  // tril, triu, dropout, topk
// softmax, log_softmax and the norms' backward kernels (op_catalog_rows_backward.cpp)
void add_row_backward_descriptors(std::vector<OpDescriptor>& out);

// Shorthands for the descriptor files.

// The row ops' tolerance: rounding grows with the row length n.
inline std::function<Tolerance(DType)> row_growth(double n) {
  return [n](DType) { return Tolerance{4, 4, n}; };
}
inline OpDescriptor descriptor(std::string name, std::string family, std::string registry_op) {
  OpDescriptor d;
  d.name = std::move(name);
  d.family = std::move(family);
  d.registry_ops = {std::move(registry_op)};
  return d;
}
inline InputSpec input(std::string name, Shape shape, Fill fill = Fill::normal) {
  InputSpec s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.fill = fill;
  return s;
}
inline InputSpec input_of(std::string name, Shape shape, DType dt, Fill fill,
                          std::int64_t range = 0) {
  InputSpec s = input(std::move(name), std::move(shape), fill);
  s.dtype = dt;
  s.range = range;
  return s;
}
inline const std::vector<DType>& floating_dtypes() {
  static const std::vector<DType> v = {DType::f32, DType::f64, DType::f16, DType::bf16};
  return v;
}
inline const std::vector<DType>& every_dtype() {
  static const std::vector<DType> v = {DType::f32,     DType::f64, DType::f16, DType::bf16,
                                       DType::boolean, DType::i32, DType::i64};
  return v;
}

}  // namespace strata::harness::detail
