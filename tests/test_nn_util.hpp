#pragma once
// Small models and comparisons shared by the nn tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "strata/nn/decoder.hpp"
#include "test_core_util.hpp"

namespace nn_test {

inline const char* const kBackends[] = {"reference", "cpu"};

inline strata::nn::ModelConfig tiny_llama(std::int64_t kv_heads = 2) {
  strata::nn::ModelConfig c;
  c.arch = strata::nn::Arch::llama;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = kv_heads;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.max_position_embeddings = 64;
  c.norm_eps = 1e-5;
  return c;  // rope_theta, untied embeddings, silu: ModelConfig's llama defaults
}

// tiny_llama's sizes (4 kv heads, a wider MLP) as a GPT-2.
inline strata::nn::ModelConfig tiny_gpt2() {
  strata::nn::ModelConfig c = tiny_llama(4);
  c.arch = strata::nn::Arch::gpt2;
  c.intermediate_size = 128;
  c.tie_word_embeddings = true;
  c.attention_bias = true;
  c.mlp_bias = true;
  c.hidden_act = "gelu_new";
  return c;
}

// A random model; std 0.2 keeps the logits far from uniform at this size.
inline strata::nn::DecoderLM random_model(const strata::nn::ModelConfig& c, std::uint64_t seed,
                                          const char* backend = "auto") {
  strata::nn::DecoderLM m(c);
  strata::nn::init_normal(m, seed, 0.2);
  m.options().backend = backend;
  return m;
}

inline strata::Tensor ids_tensor(const std::vector<std::int64_t>& ids, std::int64_t batch = 1) {
  return strata::Tensor::from_vector(ids, {batch, static_cast<std::int64_t>(ids.size()) / batch});
}

// max |a - b| / (max |b| + tiny), over every element.
inline double rel_err(const strata::Tensor& a, const strata::Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double num = 0, den = 1e-30;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num = std::max(num, std::abs(x[i] - y[i]));
    den = std::max(den, std::abs(y[i]));
  }
  return num / den;
}

}  // namespace nn_test
