#pragma once
// The benchmark model of docs/guide/models.md, shared by bench_model_cpu and
// bench_model_cuda (and mirrored by bench/peer_model.py for PyTorch): 6
// layers, d_model 512, 8 heads of 64, vocabulary 256; Llama style with 2 KV
// heads and a SwiGLU MLP of 1408 (17.2M parameters), GPT-2 style with 8 KV
// heads, a GELU MLP of 2048, biases and a tied head.
#include "strata/nn/config.hpp"

namespace strata::bench {

inline nn::ModelConfig model_config(nn::Arch arch) {
  const bool llama = arch == nn::Arch::llama;
  nn::ModelConfig c;
  c.arch = arch;
  c.vocab_size = 256;
  c.hidden_size = 512;
  c.num_layers = 6;
  c.num_heads = 8;
  c.num_kv_heads = llama ? 2 : 8;
  c.head_dim = 64;
  c.intermediate_size = llama ? 1408 : 2048;
  c.max_position_embeddings = 2048;
  c.norm_eps = 1e-5;
  c.hidden_act = llama ? "silu" : "gelu_new";
  c.tie_word_embeddings = !llama;
  c.attention_bias = c.mlp_bias = !llama;
  return c;
}

}  // namespace strata::bench
