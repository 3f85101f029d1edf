#include "strata/nn/decoder.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "decoder_checks.hpp"
#include "strata/autograd.hpp"
#include "strata/detail/checked_math.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/tuning.hpp"

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
  // The widths the layers derive from the config (the fused q/k/v and
  // gate/up projections), so that a config's sizes cannot wrap them; the
  // tensors' own element counts are checked where they are allocated.
  using strata::detail::add_or_fail;
  using strata::detail::mul_or_fail;
  const char* op = "DecoderLM";
  const std::int64_t heads =
      add_or_fail(c.num_heads, mul_or_fail(2, c.num_kv_heads, op, " (num_heads + 2 num_kv_heads)"),
                  op, " (num_heads + 2 num_kv_heads)");
  mul_or_fail(heads, c.head_dim, op, " ((num_heads + 2 num_kv_heads) * head_dim, the qkv width)");
  mul_or_fail(2, c.intermediate_size, op, " (2 * intermediate_size, the gate/up width)");
}

}  // namespace

void check_ids(const Tensor& ids, const char* op) {
  STRATA_CHECK(ids.dim() == 2 && ids.size(0) > 0 && ids.size(1) > 0, op,
               "ids must be a non-empty [batch, T], got ", shape_str(ids.shape()));
  STRATA_CHECK(is_integer(ids.dtype()), op, "ids must be i32 or i64, got ",
               dtype_name(ids.dtype()));
}

void check_positions(const ModelConfig& c, std::int64_t end, const char* op) {
  STRATA_CHECK(c.arch != Arch::gpt2 || end <= c.max_position_embeddings, op, "positions up to ",
               end, " exceed max_position_embeddings ", c.max_position_embeddings);
}

// ---- Workspace ------------------------------------------------------------------
Workspace::Workspace(const ModelConfig& c, std::int64_t b, std::int64_t t, DType dt, Device dev) {
  auto make = [&](std::int64_t n) { return Tensor::empty({b, t, n}, dt, dev); };
  x = make(c.hidden_size);
  h = make(c.hidden_size);
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

void TransformerBlock::forward_inplace(const Tensor& x, const Tensor& positions,
                                       const CacheSlot& slot, const Workspace& ws,
                                       const MatmulOptions& opt) const {
  // On cuda each sublayer's last projection accumulates into x (BLAS
  // beta = 1): the residual adds cost no op, no launch of their own. On the
  // host the sublayer writes into h (read before it is written) and add_out
  // adds it: Eigen's matrix-vector product with beta = 1 measured slower
  // than the product plus the add (docs/guide/models.md, "Residual adds").
  // STRATA_FUSED_RESIDUAL (strata/tuning.hpp) forces either, for comparison.
  const Toggle force = tuning().fused_residual;
  const bool fused =
      force != Toggle::automatic ? force == Toggle::on : x.device().type == DeviceType::cuda;
  MatmulOptions residual = opt;
  residual.accumulate = fused;
  const Tensor& y = fused ? x : ws.h;
  norm_out(norm1, ws.h, x, opt);
  attn.forward_out(y, ws.h, positions, slot, ws.attn, residual);
  if (!fused) add_out(x, x, ws.h, opt);
  norm_out(norm2, ws.h, x, opt);
  if (const auto* m = std::get_if<MLP>(&mlp)) {
    m->forward_out(y, ws.h, ws.hidden, residual);
  } else {
    std::get<GatedMLP>(mlp).forward_out(y, ws.h, ws.hidden, ws.act, residual);
  }
  if (!fused) add_out(x, x, ws.h, opt);
}

void TransformerBlock::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  visit_norm(norm1, join_name(prefix, "norm1"), fn);
  attn.visit_parameters(join_name(prefix, "attn"), fn);
  visit_norm(norm2, join_name(prefix, "norm2"), fn);
  std::visit([&](auto& m) { m.visit_parameters(join_name(prefix, "mlp"), fn); }, mlp);
}

// ---- DecoderLM --------------------------------------------------------------------
// What a recorded decode step reads and writes besides the weights and the
// cache: its own workspace (the model's per-(B, T) map may drop buffers a
// graph still points at), the ids and position it reads, and the mask of
// filled cache positions, and the logits it writes. The key says which
// calls the graph serves.
struct DecoderLM::DecodeGraph {
  // key
  std::int64_t batch = 0;
  const void* cache_data = nullptr;
  std::int64_t cache_max = 0;
  std::string backend;
  Precision precision = Precision::highest;

  Stream stream;
  Workspace ws;
  // Page-locked: the B token ids and the position (i64 [B + 1]), then the
  // mask of filled cache positions (bool [max_len]). The graph's first node
  // copies all of it into `step_bytes`: the host writes the mask, so no
  // kernel of the step sets it.
  PinnedBuffer step_host;
  Tensor step_bytes;  // bool [8 (B + 1) + max_len] on the device: step and valid
  Tensor step;        // i64 [B + 1], a view of step_bytes
  Tensor valid;       // bool [max_len], a view of step_bytes: the filled cache positions
  Tensor logits;      // f32 [B, 1, V]: the graph's output, copied into the caller's
  Graph graph;
};

DecoderLM::~DecoderLM() = default;
DecoderLM::DecoderLM(DecoderLM&&) noexcept = default;
DecoderLM& DecoderLM::operator=(DecoderLM&&) noexcept = default;

DecoderLM::DecoderLM(const ModelConfig& c, DType dt, Device dev)
    : cfg_(c), dtype_(dt), device_(dev) {
  if (tuning().cuda_graphs != Toggle::automatic) graphs_ = tuning().cuda_graphs == Toggle::on;
  check_config(c);
  check(dt == DType::f32 || dt == DType::bf16 || dt == DType::f16 || dt == DType::f64, "DecoderLM",
        "dtype must be floating, not ", dtype_name(dt));
  wte = Embedding(c.vocab_size, c.hidden_size, dt, dev);
  if (c.arch == Arch::gpt2) wpe = Embedding(c.max_position_embeddings, c.hidden_size, dt, dev);
  try {
    blocks.reserve(static_cast<std::size_t>(c.num_layers));
  } catch (const std::bad_alloc&) {
    fail("DecoderLM", "out of host memory for ", c.num_layers, " layers (num_hidden_layers)");
  } catch (const std::length_error&) {
    fail("DecoderLM", c.num_layers, " layers (num_hidden_layers) are more than a vector holds");
  }
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
  if (autograd::recording()) {
    check(cache == nullptr, "DecoderLM::forward", kNoCacheWhileTraining);
    return forward_train(ids);
  }
  Tensor logits = Tensor::empty({ids.size(0), ids.size(1), cfg_.vocab_size}, DType::f32, device_);
  forward_out(logits, ids, cache);
  return logits;
}

void DecoderLM::forward_out(const Tensor& logits, const Tensor& ids_in, KVCache* cache) {
  const char* op = "DecoderLM::forward";
  check_ids(ids_in, op);
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
  check_positions(cfg_, pos0 + t, op);
  if (autograd::recording()) {
    check(cache == nullptr, op, kNoCacheWhileTraining);
    copy_(logits, forward_train(ids_in), opt_);
    return;
  }
  if (use_graph(t, cache)) {
    graph_step(logits, ids_in, *cache);
    return;
  }
  const Tensor ids = ids_in.device() == device_ ? ids_in : ids_in.to(device_);
  const Workspace& ws = workspace(b, t);
  const Tensor pos = positions(pos0 + t).narrow(0, pos0, t);
  run(logits, ids, pos, cache, pos0, Tensor(), ws, opt_);
  if (cache != nullptr) cache->advance(t);
}

void DecoderLM::run(const Tensor& logits, const Tensor& ids, const Tensor& pos, KVCache* cache,
                    std::int64_t pos0, const Tensor& valid, const Workspace& ws,
                    const MatmulOptions& model_opt) const {
  const MatmulOptions opt = overwrite(model_opt);
  const std::int64_t t = ids.size(1);
  wte.forward_out(ws.x, ids, opt);
  if (cfg_.arch == Arch::gpt2) {
    if (valid.defined()) {
      // The position is on the device: gather its row ([T, D], broadcast over B).
      const Tensor rows = ws.h.select(0, 0);
      wpe.forward_out(rows, pos, opt);
      add_out(ws.x, ws.x, rows, opt);
    } else {
      add_out(ws.x, ws.x, wpe.weight.narrow(0, pos0, t), opt);
    }
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    LayerCache* lc = cache != nullptr ? &cache->layer(static_cast<std::int64_t>(i)) : nullptr;
    blocks[i].forward_inplace(ws.x, pos, CacheSlot{lc, pos0, valid}, ws, opt);
  }
  norm_out(norm_f, ws.h, ws.x, opt);
  if (dtype_ == DType::f32) {
    linear_out(logits, ws.h, lm_head_weight(), Tensor(), opt);
  } else {
    linear_out(ws.logits, ws.h, lm_head_weight(), Tensor(), opt);
    copy_(logits, ws.logits, opt);
  }
}

void DecoderLM::graphs(bool on) {
  graphs_ = on;
  if (!on) graph_.reset();
}

bool DecoderLM::use_graph(std::int64_t t, const KVCache* cache) const {
  return graphs_ && cache != nullptr && t == 1 && device_.type == DeviceType::cuda &&
         opt_.stream == nullptr;
}

// One decode step by graph: the ids (checked here, on the host: the graph
// cannot stop to report a bad id), the position and the mask of filled
// cache positions are written into the pinned buffer, then the graph runs
// (its first node copies them to the device). The first call for
// a key runs the step eagerly on the graph's stream (first-use set-up such
// as cuBLAS workspaces happens outside the capture) and records it.
void DecoderLM::graph_step(const Tensor& logits, const Tensor& ids, KVCache& cache) {
  const char* op = "DecoderLM::forward";
  const std::int64_t b = ids.size(0), len = cache.length();
  const void* cache_data = cache.layer(0).k.data_ptr();
  DecodeGraph* g = graph_.get();
  if (g == nullptr || g->batch != b || g->cache_data != cache_data ||
      g->cache_max != cache.max_length() || g->backend != opt_.backend ||
      g->precision != opt_.precision) {
    graph_.reset();  // before the new one's buffers are allocated
    auto n = std::make_unique<DecodeGraph>();
    n->batch = b;
    n->cache_data = cache_data;
    n->cache_max = cache.max_length();
    n->backend = opt_.backend;
    n->precision = opt_.precision;
    n->stream = Stream(device_);
    n->ws = Workspace(cfg_, b, 1, dtype_, device_);
    const std::int64_t head = (b + 1) * static_cast<std::int64_t>(sizeof(std::int64_t));
    n->step_host = PinnedBuffer(static_cast<std::size_t>(head + cache.max_length()), device_.type);
    n->step_bytes = Tensor::zeros({head + cache.max_length()}, DType::boolean, device_);
    n->step = Tensor::from_storage(n->step_bytes.storage(), {b + 1}, {1}, 0, DType::i64);
    n->valid = Tensor::from_storage(n->step_bytes.storage(), {cache.max_length()}, {1}, head,
                                    DType::boolean);
    n->logits = Tensor::empty({b, 1, cfg_.vocab_size}, DType::f32, device_);
    graph_ = std::move(n);
    g = graph_.get();
  }
  // Ids to the host (a device tensor costs one read back) and checked, all
  // before the previous step's copy may still be reading the pinned buffer.
  const Tensor host_ids = ids.to(Device::cpu());
  std::vector<std::int64_t> values(static_cast<std::size_t>(b) + 1);
  for (std::int64_t i = 0; i < b; ++i) {
    const auto id = static_cast<std::int64_t>(host_ids.item({i, 0}));
    STRATA_CHECK(id >= 0 && id < cfg_.vocab_size, op, "ids holds ", id, " at index ", i,
                 ", outside [0, ", cfg_.vocab_size, ")");
    values[static_cast<std::size_t>(i)] = id;
  }
  values.back() = len;
  g->stream.synchronize();  // the previous replay has read step_host
  auto* host = static_cast<unsigned char*>(g->step_host.data());
  const std::size_t head = values.size() * sizeof(std::int64_t);
  std::memcpy(host, values.data(), head);
  // The mask as attention reads it: every filled position and this step's
  // (the cache may have been rewound or filled eagerly since the last step).
  const auto filled = static_cast<std::size_t>(len + 1), max = g->step_host.size() - head;
  std::memset(host + head, 1, filled);
  std::memset(host + head + filled, 0, max - filled);

  MatmulOptions opt = opt_;
  opt.stream = g->stream.handle();
  const Tensor ids_dev = g->step.narrow(0, 0, b).reshape({b, 1});
  const Tensor pos = g->step.narrow(0, b, 1);
  auto body = [&] {
    g->stream.copy_to_device(g->step_bytes, g->step_host);
    run(g->logits, ids_dev, pos, &cache, len, g->valid, g->ws, opt);
  };
  if (!g->graph.defined()) {
    body();
    g->graph = Graph::capture(g->stream, body);
    ++graph_captures_;
  } else {
    g->graph.replay(g->stream);
  }
  // The graph writes only memory it owns: a logits tensor of the caller's
  // may be gone by the next replay.
  copy_(logits, g->logits, opt);
  cache.advance(1);
}

void DecoderLM::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  graph_.reset();  // the visitor may replace weights a recorded graph points at
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
  graph_.reset();
}

void DecoderLM::to(DType dt) {
  Module::to(dt);
  dtype_ = dt;
  workspaces_.clear();
  graph_.reset();
}

}  // namespace strata::nn
