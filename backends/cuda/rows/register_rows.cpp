// Registration of the cuda row kernels (rows_cuda.hpp's tables), named
// "cuda.rows.<op>", on f32, f64, f16 and bf16 (the key: x's dtype, the
// table's for embedding; index_copy on every dtype, keyed by dst's).
#include <string>

#include "cuda/rows/rows_cuda.hpp"
#include "strata/registry.hpp"

namespace strata::cuda {

void register_cuda_rows(Registry& r) {
  for (auto table : {&row_reduce_entries, &row_norm_entries, &row_gather_entries,
                     &row_index_copy_entries, &row_embedding_backward_entries,
                     &row_cross_entropy_entries, &row_topk_entries, &row_backward_entries})
    for (const EwEntry& e : table())
      r.add_kernel<IterArgs>(e.op, "cuda", e.dtype, std::string("cuda.rows.") + e.op, e.run);
}

}  // namespace strata::cuda
