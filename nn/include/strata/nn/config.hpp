#pragma once
// Model configuration, read from and written to a Hugging Face style
// config.json (model_type "llama" or "gpt2"). docs/guide/models.md lists the keys.
#include <cstdint>
#include <string>

namespace strata::nn {

enum class Arch {
  llama,  // RMSNorm, rotary, SwiGLU MLP, grouped-query heads, no biases
  gpt2,   // LayerNorm, learned positions, GELU MLP, biases, tied output
};

struct ModelConfig {
  Arch arch = Arch::llama;
  std::int64_t vocab_size = 256;
  std::int64_t hidden_size = 512;
  std::int64_t num_layers = 6;
  std::int64_t num_heads = 8;
  std::int64_t num_kv_heads = 8;          // gpt2: = num_heads
  std::int64_t head_dim = 64;             // hidden_size / num_heads unless given
  std::int64_t intermediate_size = 1408;  // gpt2: n_inner, default 4 * hidden_size
  std::int64_t max_position_embeddings = 2048;
  double norm_eps = 1e-5;            // rms_norm_eps or layer_norm_epsilon
  double rope_theta = 10000.0;       // llama only
  bool tie_word_embeddings = false;  // gpt2 default true
  bool attention_bias = false;       // gpt2: true
  bool mlp_bias = false;             // gpt2: true
  std::string hidden_act = "silu";   // "silu", "gelu", "gelu_new" (tanh form)
};

// Parses config.json text; a missing required key, a wrong type, an unknown
// model_type or an inconsistent size (hidden_size not divisible by heads,
// heads not divisible by KV heads, a non-positive size) is a strata::Error
// naming `source` and the key. Required: model_type, vocab_size and the
// sizes (llama: hidden_size, num_hidden_layers, num_attention_heads,
// intermediate_size; gpt2: n_embd, n_layer, n_head, or their generic names
// hidden_size, num_hidden_layers, num_attention_heads). Other keys take
// transformers' defaults when absent or null (llama: rms_norm_eps 1e-6,
// rope_theta 10000 (also read from rope_parameters), max_position_embeddings
// 2048; gpt2: n_positions 1024, layer_norm_epsilon 1e-5, activation_function
// gelu_new). Unsupported variants are errors: rope_scaling, GPT-2's
// scale_attn_weights false, scale_attn_by_inverse_layer_idx, cross attention.
// Keys this model does not use (torch_dtype, dropout, ...) are ignored.
ModelConfig parse_config(const std::string& json_text, const std::string& source);
ModelConfig load_config(const std::string& path);
// The config as Hugging Face writes it for that model_type (GPT-2's own key
// names: n_embd, n_layer, n_head, n_positions, n_inner, layer_norm_epsilon).
// Validated as parse_config would; a gpt2 config with anything GPT-2's keys
// cannot say (GQA, no biases, another head_dim) is an error.
std::string config_to_json(const ModelConfig& cfg);
void save_config(const std::string& path, const ModelConfig& cfg);

}  // namespace strata::nn
