// config.json in Hugging Face's conventions (transformers' LlamaConfig and
// GPT2Config: the same keys, the same defaults for keys left out).
#include "strata/nn/config.hpp"

#include <cmath>
#include <new>
#include <nlohmann/json.hpp>
#include <string_view>

#include "json_brief.hpp"
#include "strata/detail/checked_math.hpp"
#include "strata/detail/file_io.hpp"
#include "strata/error.hpp"

namespace strata::nn {
namespace {

using json = nlohmann::json;

// Reads keys of one config.json; every error names the source and the key.
class Keys {
 public:
  Keys(const json& j, std::string source) : j_(j), source_(std::move(source)) {}

  [[noreturn]] void fail_key(std::string_view key, const std::string& why) const {
    fail("config", "'", source_, "': key '", key, "': ", why);
  }

  // The value, or nullptr when the key is absent or null (transformers
  // treats null as "use the default" for the keys read here).
  const json* find(std::string_view key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  // A key with an alias (GPT-2's attribute_map: hidden_size for n_embd):
  // the one present, or an error when both are present and differ.
  const json* find(std::string_view key, std::string_view alias) const {
    const json* a = find(key);
    const json* b = find(alias);
    if (a && b) {
      // Only scalars are compared: the caller's type check rejects an array
      // or object, and comparing nested ones would recurse (json_brief.hpp).
      if (!a->is_primitive()) return a;
      if (!b->is_primitive()) return b;
      if (*a != *b)
        fail_key(key, "is " + detail::json_brief(*a) + " but its alias '" + std::string(alias) +
                          "' is " + detail::json_brief(*b));
    }
    return a ? a : b;
  }

  std::int64_t integer(std::string_view key, const json* v) const {
    if (v == nullptr) fail_key(key, "missing (required)");
    if (!v->is_number_integer()) fail_key(key, "is " + detail::json_brief(*v) + ", not an integer");
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > INT64_MAX)
      fail_key(key, "is " + detail::json_brief(*v) + ", too large");
    return v->get<std::int64_t>();
  }
  std::int64_t integer(std::string_view key, const json* v, std::int64_t dflt) const {
    return v == nullptr ? dflt : integer(key, v);
  }
  double number(std::string_view key, const json* v, double dflt) const {
    if (v == nullptr) return dflt;
    if (!v->is_number()) fail_key(key, "is " + detail::json_brief(*v) + ", not a number");
    return v->get<double>();
  }
  bool boolean(std::string_view key, const json* v, bool dflt) const {
    if (v == nullptr) return dflt;
    if (!v->is_boolean()) fail_key(key, "is " + detail::json_brief(*v) + ", not true or false");
    return v->get<bool>();
  }
  std::string string(std::string_view key, const json* v, const std::string& dflt) const {
    if (v == nullptr) return dflt;
    if (!v->is_string()) fail_key(key, "is " + detail::json_brief(*v) + ", not a string");
    return v->get<std::string>();
  }

 private:
  const json& j_;
  std::string source_;
};

bool known_act(const std::string& act) {
  return act == "silu" || act == "gelu" || act == "gelu_new";
}

// The checks shared by parse_config and config_to_json, with the config's
// own key names (so a message points at the line to fix in config.json).
void validate(const ModelConfig& c, const Keys& k) {
  const bool gpt2 = c.arch == Arch::gpt2;
  auto positive = [&](std::int64_t v, const char* llama_key, const char* gpt2_key) {
    if (v <= 0) k.fail_key(gpt2 ? gpt2_key : llama_key, "is " + std::to_string(v) + ", not > 0");
  };
  positive(c.vocab_size, "vocab_size", "vocab_size");
  positive(c.hidden_size, "hidden_size", "n_embd");
  positive(c.num_layers, "num_hidden_layers", "n_layer");
  positive(c.num_heads, "num_attention_heads", "n_head");
  positive(c.num_kv_heads, "num_key_value_heads", "n_head");
  positive(c.head_dim, "head_dim", "n_embd");
  positive(c.intermediate_size, "intermediate_size", "n_inner");
  positive(c.max_position_embeddings, "max_position_embeddings", "n_positions");
  const char* eps_key = gpt2 ? "layer_norm_epsilon" : "rms_norm_eps";
  if (!(c.norm_eps > 0 && std::isfinite(c.norm_eps)))
    k.fail_key(eps_key, "is " + std::to_string(c.norm_eps) + ", not a positive finite number");
  const char* act_key = gpt2 ? "activation_function" : "hidden_act";
  if (!known_act(c.hidden_act))
    k.fail_key(act_key, "'" + detail::text_brief(c.hidden_act) +
                            "' is not supported (silu, gelu, gelu_new)");
  if (c.num_heads % c.num_kv_heads != 0)
    k.fail_key("num_key_value_heads", std::to_string(c.num_kv_heads) + " does not divide " +
                                          "num_attention_heads " + std::to_string(c.num_heads));
  if (gpt2) {
    if (c.hidden_size % c.num_heads != 0)
      k.fail_key("n_head", std::to_string(c.num_heads) + " does not divide n_embd " +
                               std::to_string(c.hidden_size));
    // What GPT-2's config cannot say: its layout is fixed.
    if (c.num_kv_heads != c.num_heads || c.head_dim != c.hidden_size / c.num_heads ||
        !c.attention_bias || !c.mlp_bias)
      k.fail_key("model_type",
                 "gpt2 has num_kv_heads == num_heads, head_dim == n_embd / n_head and biases; "
                 "this config differs");
  } else {
    if (!(c.rope_theta > 0 && std::isfinite(c.rope_theta)))
      k.fail_key("rope_theta",
                 "is " + std::to_string(c.rope_theta) + ", not a positive finite number");
    if (c.head_dim % 2 != 0)
      k.fail_key("head_dim", "is " + std::to_string(c.head_dim) + ", not even (rotary pairs)");
  }
}

ModelConfig parse_llama(const Keys& k) {
  ModelConfig c;
  c.arch = Arch::llama;
  c.vocab_size = k.integer("vocab_size", k.find("vocab_size"));
  c.hidden_size = k.integer("hidden_size", k.find("hidden_size"));
  c.num_layers = k.integer("num_hidden_layers", k.find("num_hidden_layers"));
  c.num_heads = k.integer("num_attention_heads", k.find("num_attention_heads"));
  c.intermediate_size = k.integer("intermediate_size", k.find("intermediate_size"));
  if (c.num_heads <= 0) validate(c, k);  // before dividing by it
  c.num_kv_heads = k.integer("num_key_value_heads", k.find("num_key_value_heads"), c.num_heads);
  if (const json* hd = k.find("head_dim")) {
    c.head_dim = k.integer("head_dim", hd);
  } else {
    if (c.hidden_size % c.num_heads != 0)
      k.fail_key("num_attention_heads", std::to_string(c.num_heads) +
                                            " does not divide hidden_size " +
                                            std::to_string(c.hidden_size) + " (and no head_dim)");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  c.max_position_embeddings =
      k.integer("max_position_embeddings", k.find("max_position_embeddings"), 2048);
  c.norm_eps = k.number("rms_norm_eps", k.find("rms_norm_eps"), 1e-6);
  if (k.find("rope_scaling") != nullptr)
    k.fail_key("rope_scaling", "is set; rope scaling is not supported (only plain rotary)");
  double theta = 10000.0;
  // transformers 5 moved rope_theta into rope_parameters.
  if (const json* rp = k.find("rope_parameters")) {
    if (!rp->is_object())
      k.fail_key("rope_parameters", "is " + detail::json_brief(*rp) + ", not an object");
    const Keys rk(*rp, "rope_parameters");
    const std::string type = rk.string("rope_type", rk.find("rope_type"), "default");
    if (type != "default")
      k.fail_key("rope_parameters",
                 "rope_type '" + detail::text_brief(type) + "' is not supported (only default)");
    theta = rk.number("rope_theta", rk.find("rope_theta"), theta);
  }
  c.rope_theta = k.number("rope_theta", k.find("rope_theta"), theta);
  c.tie_word_embeddings = k.boolean("tie_word_embeddings", k.find("tie_word_embeddings"), false);
  c.attention_bias = k.boolean("attention_bias", k.find("attention_bias"), false);
  c.mlp_bias = k.boolean("mlp_bias", k.find("mlp_bias"), false);
  c.hidden_act = k.string("hidden_act", k.find("hidden_act"), "silu");
  return c;
}

ModelConfig parse_gpt2(const Keys& k) {
  ModelConfig c;
  c.arch = Arch::gpt2;
  c.vocab_size = k.integer("vocab_size", k.find("vocab_size"));
  c.hidden_size = k.integer("n_embd", k.find("n_embd", "hidden_size"));
  c.num_layers = k.integer("n_layer", k.find("n_layer", "num_hidden_layers"));
  c.num_heads = k.integer("n_head", k.find("n_head", "num_attention_heads"));
  c.max_position_embeddings =
      k.integer("n_positions", k.find("n_positions", "max_position_embeddings"), 1024);
  c.num_kv_heads = c.num_heads;
  if (c.num_heads <= 0 || c.hidden_size <= 0) validate(c, k);  // before dividing
  c.head_dim = c.hidden_size / c.num_heads;
  c.intermediate_size =
      k.integer("n_inner", k.find("n_inner"),
                strata::detail::mul_or_fail(4, c.hidden_size, "config", " (n_inner = 4 * n_embd)"));
  c.norm_eps = k.number("layer_norm_epsilon", k.find("layer_norm_epsilon"), 1e-5);
  c.hidden_act = k.string("activation_function", k.find("activation_function"), "gelu_new");
  c.tie_word_embeddings = k.boolean("tie_word_embeddings", k.find("tie_word_embeddings"), true);
  c.attention_bias = c.mlp_bias = true;
  // Variants of GPT-2's attention that the model here does not implement.
  if (!k.boolean("scale_attn_weights", k.find("scale_attn_weights"), true))
    k.fail_key("scale_attn_weights", "false is not supported");
  if (k.boolean("scale_attn_by_inverse_layer_idx", k.find("scale_attn_by_inverse_layer_idx"),
                false))
    k.fail_key("scale_attn_by_inverse_layer_idx", "true is not supported");
  if (k.boolean("add_cross_attention", k.find("add_cross_attention"), false))
    k.fail_key("add_cross_attention", "true is not supported (decoder-only models)");
  return c;
}

}  // namespace

ModelConfig parse_config(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    fail("config", "'", source, "': not valid JSON (", e.what(), ")");
  } catch (const std::bad_alloc&) {
    fail("config", "'", source, "': out of memory parsing ", json_text.size(), " bytes");
  }
  STRATA_CHECK(j.is_object(), "config", "'", source, "': a JSON ", j.type_name(),
               ", not an object");
  const Keys k(j, source);
  const std::string type = k.string("model_type", k.find("model_type"), "");
  ModelConfig c;
  if (type == "llama") {
    c = parse_llama(k);
  } else if (type == "gpt2") {
    c = parse_gpt2(k);
  } else if (type.empty()) {
    k.fail_key("model_type", "missing (expected \"llama\" or \"gpt2\")");
  } else {
    k.fail_key("model_type", "'" + detail::text_brief(type) +
                                 "' is not supported (expected \"llama\" or \"gpt2\")");
  }
  validate(c, k);
  return c;
}

ModelConfig load_config(const std::string& path) {
  const std::vector<std::uint8_t> bytes = strata::detail::read_file_bytes(path, "config");
  return parse_config(std::string(bytes.begin(), bytes.end()), path);
}

std::string config_to_json(const ModelConfig& cfg) {
  const json none;
  validate(cfg, Keys(none, "config_to_json"));
  nlohmann::ordered_json j;
  if (cfg.arch == Arch::llama) {
    j["architectures"] = {"LlamaForCausalLM"};
    j["model_type"] = "llama";
    j["vocab_size"] = cfg.vocab_size;
    j["hidden_size"] = cfg.hidden_size;
    j["intermediate_size"] = cfg.intermediate_size;
    j["num_hidden_layers"] = cfg.num_layers;
    j["num_attention_heads"] = cfg.num_heads;
    j["num_key_value_heads"] = cfg.num_kv_heads;
    j["head_dim"] = cfg.head_dim;
    j["hidden_act"] = cfg.hidden_act;
    j["max_position_embeddings"] = cfg.max_position_embeddings;
    j["rms_norm_eps"] = cfg.norm_eps;
    j["rope_theta"] = cfg.rope_theta;
    j["attention_bias"] = cfg.attention_bias;
    j["mlp_bias"] = cfg.mlp_bias;
    j["tie_word_embeddings"] = cfg.tie_word_embeddings;
  } else {
    j["architectures"] = {"GPT2LMHeadModel"};
    j["model_type"] = "gpt2";
    j["vocab_size"] = cfg.vocab_size;
    j["n_positions"] = cfg.max_position_embeddings;
    j["n_embd"] = cfg.hidden_size;
    j["n_layer"] = cfg.num_layers;
    j["n_head"] = cfg.num_heads;
    j["n_inner"] = cfg.intermediate_size;
    j["activation_function"] = cfg.hidden_act;
    j["layer_norm_epsilon"] = cfg.norm_eps;
    j["tie_word_embeddings"] = cfg.tie_word_embeddings;
  }
  return j.dump(2) + "\n";
}

void save_config(const std::string& path, const ModelConfig& cfg) {
  const std::string text = config_to_json(cfg);  // validated before the file is touched
  strata::detail::ReplacingFile file(path, "save_config");
  file.write(text.data(), text.size());
  file.commit();
}

}  // namespace strata::nn
