#include "strata/nn/hf_weights.hpp"

#include <set>
#include <vector>

#include "strata/concat.hpp"
#include "strata/elementwise.hpp"

namespace strata::nn {

namespace {

// One checkpoint tensor and the shape it must have.
struct Part {
  std::string name;
  Shape shape;
};

// One model parameter: its parts are concatenated along dim 0 (after the
// Conv1D transpose, for GPT-2's [in, out] weights).
struct Entry {
  std::string param;
  std::vector<Part> parts;
  bool conv1d = false;
};

std::vector<Entry> plan(const ModelConfig& c, const std::string& gpt2_prefix) {
  const std::int64_t D = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const std::int64_t Q = c.num_heads * c.head_dim, KV = c.num_kv_heads * c.head_dim;
  std::vector<Entry> e;
  auto add = [&](std::string param, std::vector<Part> parts, bool conv1d = false) {
    e.push_back({std::move(param), std::move(parts), conv1d});
  };
  if (c.arch == Arch::llama) {
    add("wte.weight", {{"model.embed_tokens.weight", {V, D}}});
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
      const std::string h = "model.layers." + std::to_string(i) + ".";
      const std::string b = "blocks." + std::to_string(i) + ".";
      add(b + "norm1.weight", {{h + "input_layernorm.weight", {D}}});
      add(b + "attn.qkv.weight", {{h + "self_attn.q_proj.weight", {Q, D}},
                                  {h + "self_attn.k_proj.weight", {KV, D}},
                                  {h + "self_attn.v_proj.weight", {KV, D}}});
      if (c.attention_bias)
        add(b + "attn.qkv.bias", {{h + "self_attn.q_proj.bias", {Q}},
                                  {h + "self_attn.k_proj.bias", {KV}},
                                  {h + "self_attn.v_proj.bias", {KV}}});
      add(b + "attn.out.weight", {{h + "self_attn.o_proj.weight", {D, Q}}});
      if (c.attention_bias) add(b + "attn.out.bias", {{h + "self_attn.o_proj.bias", {D}}});
      add(b + "norm2.weight", {{h + "post_attention_layernorm.weight", {D}}});
      add(b + "mlp.gate_up.weight",
          {{h + "mlp.gate_proj.weight", {F, D}}, {h + "mlp.up_proj.weight", {F, D}}});
      if (c.mlp_bias)
        add(b + "mlp.gate_up.bias",
            {{h + "mlp.gate_proj.bias", {F}}, {h + "mlp.up_proj.bias", {F}}});
      add(b + "mlp.down.weight", {{h + "mlp.down_proj.weight", {D, F}}});
      if (c.mlp_bias) add(b + "mlp.down.bias", {{h + "mlp.down_proj.bias", {D}}});
    }
    add("norm_f.weight", {{"model.norm.weight", {D}}});
    if (!c.tie_word_embeddings) add("lm_head.weight", {{"lm_head.weight", {V, D}}});
    return e;
  }
  const std::string& p = gpt2_prefix;
  add("wte.weight", {{p + "wte.weight", {V, D}}});
  add("wpe.weight", {{p + "wpe.weight", {c.max_position_embeddings, D}}});
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".";
    const std::string b = "blocks." + std::to_string(i) + ".";
    add(b + "norm1.weight", {{h + "ln_1.weight", {D}}});
    add(b + "norm1.bias", {{h + "ln_1.bias", {D}}});
    add(b + "attn.qkv.weight", {{h + "attn.c_attn.weight", {D, Q + 2 * KV}}}, true);
    if (c.attention_bias) add(b + "attn.qkv.bias", {{h + "attn.c_attn.bias", {Q + 2 * KV}}});
    add(b + "attn.out.weight", {{h + "attn.c_proj.weight", {Q, D}}}, true);
    if (c.attention_bias) add(b + "attn.out.bias", {{h + "attn.c_proj.bias", {D}}});
    add(b + "norm2.weight", {{h + "ln_2.weight", {D}}});
    add(b + "norm2.bias", {{h + "ln_2.bias", {D}}});
    add(b + "mlp.fc.weight", {{h + "mlp.c_fc.weight", {D, F}}}, true);
    if (c.mlp_bias) add(b + "mlp.fc.bias", {{h + "mlp.c_fc.bias", {F}}});
    add(b + "mlp.proj.weight", {{h + "mlp.c_proj.weight", {F, D}}}, true);
    if (c.mlp_bias) add(b + "mlp.proj.bias", {{h + "mlp.c_proj.bias", {D}}});
  }
  add("norm_f.weight", {{p + "ln_f.weight", {D}}});
  add("norm_f.bias", {{p + "ln_f.bias", {D}}});
  return e;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// Buffers transformers keeps in some checkpoints that are not parameters.
bool ignorable(const ModelConfig& c, const std::string& name) {
  if (c.arch == Arch::gpt2)
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");
  return ends_with(name, ".self_attn.rotary_emb.inv_freq");
}

std::string gpt2_prefix_of(const TensorDict& t) {
  for (const auto& [name, _] : t)
    if (starts_with(name, "transformer.")) return "transformer.";
  return "";
}

const Tensor& find_checked(const TensorDict& t, const Part& p, const std::string& source) {
  const char* op = "load_hf";
  auto it = t.find(p.name);
  check(it != t.end(), op, "missing tensor '", p.name, "' in ", source);
  const Tensor& x = it->second;
  check(is_floating(x.dtype()), op, "tensor '", p.name, "' in ", source, " has dtype ",
        dtype_name(x.dtype()), "; expected f32, f16, bf16 or f64");
  STRATA_CHECK(x.shape() == p.shape, op, "tensor '", p.name, "' in ", source, " has shape ",
               shape_str(x.shape()), "; the config needs ", shape_str(p.shape));
  return x;
}

}  // namespace

void load_hf_into(DecoderLM& model, const TensorDict& tensors, const std::string& source) {
  const char* op = "load_hf";
  const ModelConfig& cfg = model.config();
  const std::vector<Entry> entries = plan(cfg, gpt2_prefix_of(tensors));

  // 1. Validate every tensor and build the new parameters; the model is untouched.
  std::set<std::string> used;
  std::map<std::string, Tensor> fresh;
  for (const Entry& e : entries) {
    std::vector<Tensor> parts;
    for (const Part& p : e.parts) {
      const Tensor& x = find_checked(tensors, p, source);
      used.insert(p.name);
      Tensor y = x.dtype() == model.dtype() ? x : cast(x.to(Device::cpu()), model.dtype());
      parts.push_back(e.conv1d ? y.transpose(0, 1) : y);
    }
    Tensor joined = parts.size() == 1 ? parts.front().contiguous() : concat(parts, 0);
    fresh[e.param] = joined.to(model.device());
  }
  // A tied model: lm_head.weight may be stored, but only as the embedding.
  const std::string head = "lm_head.weight";
  if (model.tied() && tensors.count(head) != 0) {
    const std::string emb = cfg.arch == Arch::llama ? "model.embed_tokens.weight"
                                                    : gpt2_prefix_of(tensors) + "wte.weight";
    const Tensor h = find_checked(tensors, {head, {cfg.vocab_size, cfg.hidden_size}}, source);
    check(h.to_vector<float>() == tensors.at(emb).to_vector<float>(), op, "tensor '", head, "' in ",
          source, " differs from '", emb, "' but the model ties them");
    used.insert(head);
  }
  for (const auto& [name, _] : tensors) {
    check(used.count(name) != 0 || ignorable(cfg, name), op, "unexpected tensor '", name, "' in ",
          source, " (not a parameter of this ", cfg.arch == Arch::llama ? "llama" : "gpt2",
          " config)");
  }
  std::size_t n = 0;
  model.visit_parameters("", [&](const std::string& name, Tensor&) {
    check(fresh.count(name) != 0, op, "no checkpoint tensor maps to parameter ", name);
    ++n;
  });
  check(n == fresh.size(), op, "the mapping names ", fresh.size(), " parameters, the model has ",
        n);

  // 2. Swap them in.
  model.visit_parameters("", [&](const std::string& name, Tensor& p) { p = fresh.at(name); });
}

DecoderLM load_hf(const ModelConfig& cfg, const TensorDict& tensors, const std::string& source,
                  DType dt, Device dev) {
  DecoderLM m(cfg, dt, dev);
  load_hf_into(m, tensors, source);
  return m;
}

TensorDict save_hf(DecoderLM& model) {
  const ModelConfig& cfg = model.config();
  std::map<std::string, Tensor*> params;
  for (auto& [name, p] : model.named_parameters()) params[name] = p;
  TensorDict out;
  for (const Entry& e : plan(cfg, "transformer.")) {
    const Tensor w = params.at(e.param)->to(Device::cpu());
    std::int64_t row = 0;
    for (const Part& p : e.parts) {
      const std::int64_t rows = e.conv1d ? p.shape.back() : p.shape.front();
      Tensor piece = e.parts.size() == 1 ? w : w.narrow(0, row, rows);
      row += rows;
      out[p.name] = (e.conv1d ? piece.transpose(0, 1) : piece).clone();
    }
  }
  return out;
}

DecoderLM load_model(const std::string& config_path, const std::string& weights_path, DType dt,
                     Device dev) {
  const ModelConfig cfg = load_config(config_path);
  const SafetensorsFile f = load_safetensors(weights_path);
  return load_hf(cfg, f.tensors, weights_path, dt, dev);
}

void save_model(DecoderLM& model, const std::string& config_path, const std::string& weights_path) {
  save_config(config_path, model.config());
  save_safetensors(weights_path, save_hf(model), {{"format", "pt"}});
}

}  // namespace strata::nn
