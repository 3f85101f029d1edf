// cpu kernels of the row ops (reductions, softmax, norms, embedding,
// rotary): filled in op by op.
#include "strata/registry.hpp"

namespace strata::cpu {

void register_cpu_rows(Registry&) {}

}  // namespace strata::cpu
