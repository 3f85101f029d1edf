#pragma once
// The cuda row kernels as (op, dtype, entry point) tables, so that
// register_rows.cpp registers them without CUDA headers (docs/guide/ops.md, "Row
// ops", for the operands of each).
#include <vector>

#include "cuda/elementwise/elementwise_cuda.hpp"

namespace strata::cuda {

std::vector<EwEntry> row_reduce_entries();      // rows_reduce.cu: sum, mean, max, argmax,
                                                // softmax, log_softmax
std::vector<EwEntry> row_norm_entries();        // rows_norm.cu: layer_norm, rms_norm
std::vector<EwEntry> row_gather_entries();      // rows_gather.cu: embedding, rotary
std::vector<EwEntry> row_index_copy_entries();  // rows_index_copy.cu: index_copy (every dtype)
std::vector<EwEntry> row_embedding_backward_entries();  // rows_embedding_backward.cu
std::vector<EwEntry> row_cross_entropy_entries();       // rows_cross_entropy.cu: cross_entropy,
                                                        // cross_entropy_backward
std::vector<EwEntry> row_topk_entries();                // rows_topk.cu
std::vector<EwEntry> row_backward_entries();            // rows_backward.cu: softmax_backward,
                                              // log_softmax_backward, layer_norm_backward,
                                              // rms_norm_backward

}  // namespace strata::cuda
