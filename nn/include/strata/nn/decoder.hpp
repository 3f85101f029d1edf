#pragma once
// The pre-norm transformer block and the decoder-only language model, in
// Llama style (RMSNorm, rotary, SwiGLU, grouped-query heads, no biases) or
// GPT-2 style (LayerNorm, learned positions, GELU, biases, tied lm_head),
// built from a ModelConfig. docs/guide/models.md.
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "strata/nn/attention.hpp"
#include "strata/nn/config.hpp"
#include "strata/nn/layers.hpp"

namespace strata::nn {

using Norm = std::variant<LayerNorm, RMSNorm>;
using FeedForward = std::variant<MLP, GatedMLP>;

// Buffers of one forward call for a given (batch, length), in the model's
// dtype and device; kept by the model so that repeated calls (decode steps)
// allocate nothing.
struct Workspace {
  Workspace() = default;
  Workspace(const ModelConfig& cfg, std::int64_t batch, std::int64_t len, DType dt, Device dev);
  Tensor x;  // [B, T, D] the residual stream
  Tensor h;  // [B, T, D] normed input of a sublayer
  AttentionScratch attn;
  Tensor hidden;  // [B, T, 2F] (gated) or [B, T, F]
  Tensor act;     // [B, T, F] (gated only)
  Tensor logits;  // [B, T, V] in the model's dtype when it is not f32
};

// x += attn(norm1(x)); x += mlp(norm2(x)).
class TransformerBlock : public Module {
 public:
  TransformerBlock() = default;
  TransformerBlock(const ModelConfig& cfg, DType dt, Device dev);
  // x [B, T, D], updated in place; positions [T] i64.
  void forward_inplace(const Tensor& x, const Tensor& positions, const CacheSlot& slot,
                       const Workspace& ws, const MatmulOptions& opt = {}) const;
  // The same block written with fresh outputs (decoder_train.cpp): x [B, T, D]
  // -> [B, T, D], x untouched. What a tape records for training: no buffer
  // is written twice, so every activation the backward reads stays whole.
  Tensor forward(const Tensor& x, const Tensor& positions, const MatmulOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Norm norm1;
  MultiHeadAttention attn;
  Norm norm2;
  FeedForward mlp;
};

// DecoderLM::loss's options (docs/guide/training.md, "The language-model loss").
struct LossOptions {
  // Rows whose target is this value add nothing and are not counted.
  std::int64_t ignore_index = -100;
  // Rows of logits held at once; 0 picks about 128 MiB of them (at least 64
  // rows), so a small vocabulary's batch is one chunk.
  std::int64_t chunk_rows = 0;
};

// The loss DecoderLM::loss computes from the last block's output, for any
// hidden states: hidden [..., D] -> norm_f -> x head_weight^T [V, D] ->
// mean cross entropy against targets [...] (i32/i64), over chunks of rows so
// that no more than lo.chunk_rows rows of logits exist at once; 0-d, f32
// (f64 for f64 hidden). Under a tape: one node, whose backward recomputes
// each chunk's logits (nn/src/decoder_loss.cpp).
Tensor lm_loss(const Tensor& hidden, const Norm& norm_f, const Tensor& head_weight,
               const Tensor& targets, const LossOptions& lo = {}, const MatmulOptions& opt = {});

class DecoderLM : public Module {
 public:
  explicit DecoderLM(const ModelConfig& cfg, DType dt = DType::f32, Device dev = Device::cpu());
  ~DecoderLM() override;
  DecoderLM(DecoderLM&&) noexcept;
  DecoderLM& operator=(DecoderLM&&) noexcept;
  DecoderLM(const DecoderLM&) = delete;
  DecoderLM& operator=(const DecoderLM&) = delete;

  const ModelConfig& config() const { return cfg_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // Backend and stream for every op of the model ("auto" by default), and
  // the f32 matmul precision.
  MatmulOptions& options() { return opt_; }
  const MatmulOptions& options() const { return opt_; }

  // A cache for `batch` sequences of up to max_len positions, in the model's
  // dtype and device.
  KVCache make_cache(std::int64_t batch, std::int64_t max_len) const;

  // ids [B, T] (i32/i64, any device) -> logits f32 [B, T, V] (a fresh tensor
  // on the model's device). With a cache, the tokens sit at positions
  // cache->length() .. + T - 1, their k and v are appended and the cache
  // advances by T: a prefill is T > 1, a decode step T = 1.
  // While an autograd tape records (training), the forward runs every
  // block with fresh outputs instead of the reused in-place buffers, so
  // that the tape can take its gradients; it then takes no cache, and an
  // f64 model's logits stay f64.
  Tensor forward(const Tensor& ids, KVCache* cache = nullptr);
  // The mean cross entropy of the next-token logits against targets [B, T]
  // (i32/i64, any device), 0-d, f32 (f64 for an f64 model), without
  // holding the logits of every row at once (decoder_loss.cpp): the final
  // norm, the head and cross_entropy run over chunks of chunk_rows rows,
  // keeping each row's log-sum-exp. Under a tape the three are one node
  // whose backward recomputes each chunk's logits. Equal, up to rounding,
  // to cross_entropy(forward(ids), targets) with mean reduction.
  Tensor loss(const Tensor& ids, const Tensor& targets, const LossOptions& lo = {});
  // The same into logits f32 [B, T, V] on the model's device (any strides).
  // After the first call for a (B, T) a call allocates nothing when ids are
  // on the model's device.
  void forward_out(const Tensor& logits, const Tensor& ids, KVCache* cache = nullptr);

  // Decode steps on CUDA graphs (docs/guide/models.md, "Decode on CUDA graphs").
  // On a cuda model, a forward_out with a cache, T = 1 and no stream of the
  // caller's (options().stream null) records the step's work once into a
  // graph and replays it on later steps: the token ids and the position are
  // written into device buffers the graph reads, and attention reads the
  // whole cache through a mask of its filled positions, so one graph serves
  // every cache length. The graph is recorded again when the batch, the
  // cache or the options change, and after to() or visit_parameters(). On by default;
  // STRATA_CUDA_GRAPHS=0 in the environment or graphs(false) runs every op eagerly.
  void graphs(bool on);
  bool graphs() const { return graphs_; }
  // Gradient checkpointing per block while training: each block's
  // activations are dropped after the forward and recomputed in backward
  // (autograd::checkpoint), trading one more forward for memory. Off by default.
  void recompute_blocks(bool on) { recompute_blocks_ = on; }
  bool recompute_blocks() const { return recompute_blocks_; }
  // Graphs recorded so far (tests and benchmarks check that steps replay).
  std::int64_t graph_captures() const { return graph_captures_; }

  // The output projection's weight [V, D]: wte's when tied.
  const Tensor& lm_head_weight() const { return tied() ? wte.weight : lm_head.weight; }
  bool tied() const { return cfg_.tie_word_embeddings || cfg_.arch == Arch::gpt2; }

  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;
  void to(Device dev) override;
  void to(DType dt) override;

  Embedding wte;
  Embedding wpe;  // GPT-2 only (learned positions)
  std::vector<TransformerBlock> blocks;
  Norm norm_f;
  Linear lm_head;  // undefined when tied

 private:
  struct DecodeGraph;
  const Workspace& workspace(std::int64_t batch, std::int64_t len);
  const Tensor& positions(std::int64_t end);
  // The model's ops from ids to logits; slot.cache is layer 0's (or null).
  void run(const Tensor& logits, const Tensor& ids, const Tensor& pos, KVCache* cache,
           std::int64_t pos0, const Tensor& valid, const Workspace& ws,
           const MatmulOptions& opt) const;
  bool use_graph(std::int64_t t, const KVCache* cache) const;
  // forward under a recording tape (decoder_train.cpp).
  Tensor forward_train(const Tensor& ids);
  // Its residual stream after the last block, before norm_f: [B, T, D].
  Tensor hidden_states(const Tensor& ids, const char* op);
  void graph_step(const Tensor& logits, const Tensor& ids, KVCache& cache);

  ModelConfig cfg_;
  DType dtype_;
  Device device_;
  MatmulOptions opt_;
  std::map<std::pair<std::int64_t, std::int64_t>, Workspace> workspaces_;
  Tensor positions_;  // arange(n) i64 on the device, grown on demand
  bool graphs_ = true;
  bool recompute_blocks_ = false;
  std::int64_t graph_captures_ = 0;
  std::unique_ptr<DecodeGraph> graph_;
};

}  // namespace strata::nn
