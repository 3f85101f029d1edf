#pragma once
// The checks DecoderLM's inference forward (decoder.cpp) and its training
// forward (decoder_train.cpp) share.
#include <cstdint>

#include "strata/nn/config.hpp"
#include "strata/tensor.hpp"

namespace strata::nn {

inline constexpr const char* kNoCacheWhileTraining =
    "a KV cache while a tape records: training runs whole sequences (pause the tape with "
    "autograd::NoGrad to decode)";

// ids: a non-empty [batch, T] of i32 or i64.
void check_ids(const Tensor& ids, const char* op);
// gpt2's learned positions stop at max_position_embeddings.
void check_positions(const ModelConfig& c, std::int64_t end, const char* op);

}  // namespace strata::nn
