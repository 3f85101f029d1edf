// cpu matmul and linear: filled in by the matmul work.
#include "strata/registry.hpp"

namespace strata::cpu {

void register_cpu_matmul(Registry&) {}

}  // namespace strata::cpu
