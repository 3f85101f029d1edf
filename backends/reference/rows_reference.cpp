// reference kernels of the row ops (reductions, softmax, norms, embedding,
// rotary): filled in op by op.
#include "strata/registry.hpp"

namespace strata::reference {

void register_reference_rows(Registry&) {}

}  // namespace strata::reference
