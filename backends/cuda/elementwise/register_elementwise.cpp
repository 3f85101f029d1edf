// Registration of the cuda elementwise kernels (the tables of
// elementwise_cuda.hpp), named "cuda.elementwise.<op>", for the same dtypes
// as the cpu engine: the maths ops on f32, f64, f16, bf16; where, cast,
// fill and the comparisons on every dtype.
#include <string>

#include "cuda/elementwise/elementwise_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_elementwise(Registry& r) {
  for (auto table : {&ew_binary_entries, &ew_scalar_entries, &ew_unary_entries, &ew_misc_entries,
                     &ew_cast_entries, &ew_compare_entries, &ew_indexed_entries})
    for (const EwEntry& e : table())
      r.add_kernel<IterArgs>(e.op, "cuda", e.dtype, std::string("cuda.elementwise.") + e.op, e.run);
}

}  // namespace strata::cuda
