// libFuzzer target: the config.json reader (nn/src/config.cpp) on arbitrary
// bytes. Every input must parse or throw strata::Error; anything else (a
// crash, a sanitizer report, another exception type) is a finding. A config
// that parses is written back with config_to_json and must parse again to
// the same fields, and writing that gives the same text again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "strata/error.hpp"
#include "strata/nn/config.hpp"

namespace {

using strata::nn::ModelConfig;

bool same(const ModelConfig& a, const ModelConfig& b) {
  return a.arch == b.arch && a.vocab_size == b.vocab_size && a.hidden_size == b.hidden_size &&
         a.num_layers == b.num_layers && a.num_heads == b.num_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
         a.intermediate_size == b.intermediate_size &&
         a.max_position_embeddings == b.max_position_embeddings && a.norm_eps == b.norm_eps &&
         a.rope_theta == b.rope_theta && a.tie_word_embeddings == b.tie_word_embeddings &&
         a.attention_bias == b.attention_bias && a.mlp_bias == b.mlp_bias &&
         a.hidden_act == b.hidden_act;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ModelConfig c;
  try {
    c = strata::nn::parse_config(std::string(reinterpret_cast<const char*>(data), size),
                                 "fuzz input");
  } catch (const strata::Error&) {
    return 0;  // refused with a message: fine
  }
  // Parsed: what the writer makes of it must be accepted by the reader and
  // give the same config and the same text (the writer is canonical).
  try {
    const std::string text = strata::nn::config_to_json(c);
    const ModelConfig again = strata::nn::parse_config(text, "round trip");
    if (!same(c, again) || strata::nn::config_to_json(again) != text) std::abort();
  } catch (const strata::Error&) {
    std::abort();  // the reader accepted what the writer then refused, or the reverse
  }
  return 0;
}
