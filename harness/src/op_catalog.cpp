// op_catalog(): every family's descriptors, built once.
#include "op_catalog.hpp"

namespace strata::harness {

const std::vector<OpDescriptor>& op_catalog() {
  static const std::vector<OpDescriptor> all = [] {
    std::vector<OpDescriptor> v;
    detail::add_elementwise_descriptors(v);
    detail::add_row_descriptors(v);
    detail::add_matmul_descriptors(v);
    detail::add_select_descriptors(v);
    return v;
  }();
  return all;
}

}  // namespace strata::harness
