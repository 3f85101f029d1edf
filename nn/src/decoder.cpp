#include "strata/nn/decoder.hpp"

#include "strata/elementwise.hpp"

namespace strata::nn {

namespace {

Norm make_norm(const ModelConfig& cfg, DType dt, Device dev) {
  if (cfg.arch == Arch::gpt2) return LayerNorm(cfg.hidden_size, cfg.norm_eps, true, dt, dev);
  return RMSNorm(cfg.hidden_size, cfg.norm_eps, dt, dev);
}

void norm_out(const Norm& n, const Tensor& out, const Tensor& x, const OpOptions& opt) {
  std::visit([&](const auto& m) { m.forward_out(out, x, opt); }, n);
}

void visit_norm(Norm& n, const std::string& prefix, const ParamVisitor& fn) {
  std::visit([&](auto& m) { m.visit_parameters(prefix, fn); }, n);
}

void check_config(const ModelConfig& c) {
  check(c.vocab_size > 0 && c.hidden_size > 0 && c.num_layers > 0 && c.num_heads > 0 &&
            c.num_kv_heads > 0 && c.head_dim > 0 && c.intermediate_size > 0 &&
            c.max_position_embeddings > 0,
        "DecoderLM", "every size in the config must be positive");
  check(c.num_heads % c.num_kv_heads == 0, "DecoderLM", "num_key_value_heads ", c.num_kv_heads,
        " must divide num_attention_heads ", c.num_heads);
  check(c.arch != Arch::gpt2 || c.num_kv_heads == c.num_heads, "DecoderLM",
        "gpt2 has as many KV heads as heads (", c.num_kv_heads, " vs ", c.num_heads, ")");
}

}  // namespace

// ---- Workspace ------------------------------------------------------------------
Workspace::Workspace(const ModelConfig& c, std::int64_t b, std::int64_t t, DType dt, Device dev) {
  auto make = [&](std::int64_t n) { return Tensor::empty({b, t, n}, dt, dev); };
  x = make(c.hidden_size);
  h = make(c.hidden_size);
  tmp = make(c.hidden_size);
  attn.qkv = make((c.num_heads + 2 * c.num_kv_heads) * c.head_dim);
  attn.attn = make(c.num_heads * c.head_dim);
  if (c.arch == Arch::gpt2) {
    hidden = make(c.intermediate_size);
  } else {
    hidden = make(2 * c.intermediate_size);
    act = make(c.intermediate_size);
  }
  if (dt != DType::f32) logits = make(c.vocab_size);
}

// ---- TransformerBlock -------------------------------------------------------------
TransformerBlock::TransformerBlock(const ModelConfig& c, DType dt, Device dev)
    : norm1(make_norm(c, dt, dev)), norm2(make_norm(c, dt, dev)) {
  std::optional<RotaryOptions> ro;
  if (c.arch == Arch::llama) {
    RotaryOptions r;
    r.theta = c.rope_theta;
    r.style = RotaryStyle::half;
    ro = r;
  }
  attn = MultiHeadAttention(c.hidden_size, c.num_heads, c.num_kv_heads, c.head_dim,
                            c.attention_bias, ro, dt, dev);
  const Activation a = parse_activation(c.hidden_act);
  if (c.arch == Arch::gpt2) {
    mlp = MLP(c.hidden_size, c.intermediate_size, c.mlp_bias, a, dt, dev);
  } else {
    mlp = GatedMLP(c.hidden_size, c.intermediate_size, c.mlp_bias, a, dt, dev);
  }
}

void TransformerBlock::forward_inplace(const Tensor& x, const Tensor& positions, LayerCache* cache,
                                       std::int64_t cache_len, const Workspace& ws,
                                       const MatmulOptions& opt) const {
  norm_out(norm1, ws.h, x, opt);
  attn.forward_out(ws.tmp, ws.h, positions, cache, cache_len, ws.attn, opt);
  add_out(x, x, ws.tmp, opt);
  norm_out(norm2, ws.h, x, opt);
  if (const auto* m = std::get_if<MLP>(&mlp)) {
    m->forward_out(ws.tmp, ws.h, ws.hidden, opt);
  } else {
    std::get<GatedMLP>(mlp).forward_out(ws.tmp, ws.h, ws.hidden, ws.act, opt);
  }
  add_out(x, x, ws.tmp, opt);
}

void TransformerBlock::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  visit_norm(norm1, join_name(prefix, "norm1"), fn);
  attn.visit_parameters(join_name(prefix, "attn"), fn);
  visit_norm(norm2, join_name(prefix, "norm2"), fn);
  std::visit([&](auto& m) { m.visit_parameters(join_name(prefix, "mlp"), fn); }, mlp);
}

// ---- DecoderLM --------------------------------------------------------------------
DecoderLM::DecoderLM(const ModelConfig& c, DType dt, Device dev)
    : cfg_(c), dtype_(dt), device_(dev) {
  check_config(c);
  check(dt == DType::f32 || dt == DType::bf16 || dt == DType::f16 || dt == DType::f64, "DecoderLM",
        "dtype must be floating, not ", dtype_name(dt));
  wte = Embedding(c.vocab_size, c.hidden_size, dt, dev);
  if (c.arch == Arch::gpt2) wpe = Embedding(c.max_position_embeddings, c.hidden_size, dt, dev);
  blocks.reserve(static_cast<std::size_t>(c.num_layers));
  for (std::int64_t i = 0; i < c.num_layers; ++i) blocks.emplace_back(c, dt, dev);
  norm_f = make_norm(c, dt, dev);
  if (!tied()) lm_head = Linear(c.hidden_size, c.vocab_size, false, dt, dev);
}

KVCache DecoderLM::make_cache(std::int64_t batch, std::int64_t max_len) const {
  return KVCache(cfg_.num_layers, batch, cfg_.num_kv_heads, cfg_.head_dim, max_len, dtype_,
                 device_);
}

const Workspace& DecoderLM::workspace(std::int64_t b, std::int64_t t) {
  const auto key = std::make_pair(b, t);
  auto it = workspaces_.find(key);
  if (it != workspaces_.end()) return it->second;
  // Prefills of many lengths would otherwise pile up buffers; decode steps
  // rebuild theirs once after this.
  if (workspaces_.size() >= 4) workspaces_.clear();
  return workspaces_.emplace(key, Workspace(cfg_, b, t, dtype_, device_)).first->second;
}

const Tensor& DecoderLM::positions(std::int64_t end) {
  if (!positions_.defined() || positions_.size(0) < end) {
    std::int64_t n = 256;
    while (n < end) n *= 2;
    positions_ = Tensor::arange(n, DType::i64, device_);
  }
  return positions_;
}

Tensor DecoderLM::forward(const Tensor& ids, KVCache* cache) {
  check(ids.dim() == 2, "DecoderLM::forward", "ids must be [batch, T], got ",
        shape_str(ids.shape()));
  Tensor logits = Tensor::empty({ids.size(0), ids.size(1), cfg_.vocab_size}, DType::f32, device_);
  forward_out(logits, ids, cache);
  return logits;
}

void DecoderLM::forward_out(const Tensor& logits, const Tensor& ids_in, KVCache* cache) {
  const char* op = "DecoderLM::forward";
  STRATA_CHECK(ids_in.dim() == 2 && ids_in.size(0) > 0 && ids_in.size(1) > 0, op,
               "ids must be a non-empty [batch, T], got ", shape_str(ids_in.shape()));
  STRATA_CHECK(is_integer(ids_in.dtype()), op, "ids must be i32 or i64, got ",
               dtype_name(ids_in.dtype()));
  const std::int64_t b = ids_in.size(0), t = ids_in.size(1);
  STRATA_CHECK(logits.dim() == 3 && logits.size(0) == b && logits.size(1) == t &&
                   logits.size(2) == cfg_.vocab_size,
               op, "logits must be [", b, ", ", t, ", ", cfg_.vocab_size, "], got ",
               shape_str(logits.shape()));
  STRATA_CHECK(logits.dtype() == DType::f32 && logits.device() == device_, op,
               "logits must be f32 on ", device_.str(), ", got ", dtype_name(logits.dtype()),
               " on ", logits.device().str());
  const std::int64_t pos0 = cache != nullptr ? cache->length() : 0;
  if (cache != nullptr) {
    STRATA_CHECK(cache->num_layers() == cfg_.num_layers && cache->batch() == b &&
                     cache->dtype() == dtype_ && cache->device() == device_,
                 op, "the cache (", cache->num_layers(), " layers, batch ", cache->batch(), ", ",
                 dtype_name(cache->dtype()), " on ", cache->device().str(),
                 ") does not fit this model and batch (", cfg_.num_layers, " layers, batch ", b,
                 ", ", dtype_name(dtype_), " on ", device_.str(), ")");
    cache->check_room(t, op);
  }
  STRATA_CHECK(cfg_.arch != Arch::gpt2 || pos0 + t <= cfg_.max_position_embeddings, op,
               "positions up to ", pos0 + t, " exceed max_position_embeddings ",
               cfg_.max_position_embeddings);
  const Tensor ids = ids_in.device() == device_ ? ids_in : ids_in.to(device_);
  const Workspace& ws = workspace(b, t);
  const Tensor pos = positions(pos0 + t).narrow(0, pos0, t);

  wte.forward_out(ws.x, ids, opt_);
  if (cfg_.arch == Arch::gpt2) add_out(ws.x, ws.x, wpe.weight.narrow(0, pos0, t), opt_);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    LayerCache* lc = cache != nullptr ? &cache->layer(static_cast<std::int64_t>(i)) : nullptr;
    blocks[i].forward_inplace(ws.x, pos, lc, pos0, ws, opt_);
  }
  norm_out(norm_f, ws.h, ws.x, opt_);
  if (dtype_ == DType::f32) {
    linear_out(logits, ws.h, lm_head_weight(), Tensor(), opt_);
  } else {
    linear_out(ws.logits, ws.h, lm_head_weight(), Tensor(), opt_);
    copy_(logits, ws.logits, opt_);
  }
  if (cache != nullptr) cache->advance(t);
}

void DecoderLM::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  wte.visit_parameters(join_name(prefix, "wte"), fn);
  if (wpe.weight.defined()) wpe.visit_parameters(join_name(prefix, "wpe"), fn);
  for (std::size_t i = 0; i < blocks.size(); ++i)
    blocks[i].visit_parameters(join_name(prefix, "blocks." + std::to_string(i)), fn);
  visit_norm(norm_f, join_name(prefix, "norm_f"), fn);
  if (lm_head.weight.defined()) lm_head.visit_parameters(join_name(prefix, "lm_head"), fn);
}

void DecoderLM::to(Device dev) {
  Module::to(dev);
  device_ = dev;
  workspaces_.clear();
  positions_ = Tensor();
}

void DecoderLM::to(DType dt) {
  Module::to(dt);
  dtype_ = dt;
  workspaces_.clear();
}

}  // namespace strata::nn
