#pragma once
// Multi-head attention with one fused QKV projection, grouped-query heads,
// rotary positions and a preallocated KV cache. docs/guide/models.md.
#include <cstdint>
#include <optional>
#include <vector>

#include "strata/nn/layers.hpp"
#include "strata/rotary.hpp"

namespace strata::nn {

// One layer's cache: k and v [B, Hkv, max_len, hd] in the model's dtype and
// device. The filled prefix is `narrow(2, 0, length)`. KVCache makes k and v
// the two halves of one buffer kv [B, 2, Hkv, max_len, hd], so that a single
// copy_ appends both (they are adjacent in the QKV projection's output too);
// a LayerCache with separate k and v (kv undefined) works as well.
struct LayerCache {
  Tensor k;
  Tensor v;
  Tensor kv;  // optional: k = kv.select(1, 0), v = kv.select(1, 1)
};

// The cache of a whole model. Appending is a copy_ into a narrow view of the
// preallocated buffers (no allocation); the length advances once per forward,
// after every layer has appended. Running past max_len is a strata::Error
// raised before anything is written.
class KVCache {
 public:
  KVCache() = default;
  KVCache(std::int64_t num_layers, std::int64_t batch, std::int64_t kv_heads, std::int64_t head_dim,
          std::int64_t max_len, DType dt, Device dev);
  std::int64_t length() const { return length_; }
  std::int64_t max_length() const { return max_len_; }
  std::int64_t batch() const { return batch_; }
  std::int64_t num_layers() const { return static_cast<std::int64_t>(layers_.size()); }
  DType dtype() const;
  Device device() const;
  LayerCache& layer(std::int64_t i) { return layers_.at(static_cast<std::size_t>(i)); }
  // Throws unless `t` more positions fit; names `op`.
  void check_room(std::int64_t t, const char* op) const;
  void advance(std::int64_t t);  // after every layer appended t positions
  void reset() { length_ = 0; }  // a new sequence; the buffers are kept
  // Forgets every position from `len` on (0 <= len <= length()): reuse of a
  // shared prompt prefix, or a benchmark's fixed decode position.
  void truncate(std::int64_t len);

 private:
  std::vector<LayerCache> layers_;
  std::int64_t batch_ = 0;
  std::int64_t max_len_ = 0;
  std::int64_t length_ = 0;
};

// How one forward call reaches its layer's cache.
//  * cache == nullptr: attention over this call's own k and v.
//  * valid undefined (eager): k and v are appended at `length` (a copy_ into
//    a narrow view) and attention reads the first length + T positions.
//  * valid defined (a step captured into a graph, DecoderLM's decode on
//    CUDA): nothing here may depend on a host-side length, so k and v are
//    written at the call's device positions (index_copy_) and attention
//    reads the whole buffer, `valid` (bool [max_len], true at every filled
//    position including this call's) masking the positions not yet filled.
struct CacheSlot {
  LayerCache* cache = nullptr;
  std::int64_t length = 0;
  Tensor valid;
};

// Per-call buffers of one attention (the model keeps them per batch and length).
struct AttentionScratch {
  Tensor qkv;   // [B, T, (H + 2 Hkv) hd]
  Tensor attn;  // [B, T, H hd]
};

// q, k and v of a fused projection output, as [B, H, T, hd] / [B, Hkv, T, hd]
// views of it (no copies).
struct QKVViews {
  Tensor q;
  Tensor k;
  Tensor v;
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention() = default;
  // rotary: applied to q and k (Llama); nullopt for none (GPT-2).
  MultiHeadAttention(std::int64_t dim, std::int64_t num_heads, std::int64_t num_kv_heads,
                     std::int64_t head_dim, bool bias, std::optional<RotaryOptions> rotary,
                     DType dt = DType::f32, Device dev = Device::cpu());

  // qkv_out [B, T, (H + 2 Hkv) hd] -> views q [B, H, T, hd], k, v [B, Hkv, T, hd]
  QKVViews split(const Tensor& qkv_out) const;

  // x [B, T, dim], positions [T] (i64: the absolute positions of x's tokens)
  // -> [B, T, dim]. With a cache, k and v are appended at `cache_len` and the
  // attention reads the cache's first cache_len + T positions (causal,
  // bottom-right aligned); without one it reads this call's k and v.
  Tensor forward(const Tensor& x, const Tensor& positions, LayerCache* cache = nullptr,
                 std::int64_t cache_len = 0, const MatmulOptions& opt = {}) const;
  // opt.accumulate: out += result (the residual add folded into the out
  // projection).
  void forward_out(const Tensor& out, const Tensor& x, const Tensor& positions,
                   const CacheSlot& slot, const AttentionScratch& scratch,
                   const MatmulOptions& opt = {}) const;
  void visit_parameters(const std::string& prefix, const ParamVisitor& fn) override;

  Linear qkv;  // [(H + 2 Hkv) hd, dim]: q's rows, then k's, then v's
  Linear out;  // [dim, H hd]
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;
  std::optional<RotaryOptions> rotary;
};

}  // namespace strata::nn
