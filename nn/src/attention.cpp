#include "strata/nn/attention.hpp"

#include "strata/attention.hpp"
#include "strata/elementwise.hpp"
#include "strata/index_copy.hpp"

namespace strata::nn {

// ---- KVCache --------------------------------------------------------------------
KVCache::KVCache(std::int64_t num_layers, std::int64_t batch, std::int64_t kv_heads,
                 std::int64_t head_dim, std::int64_t max_len, DType dt, Device dev)
    : batch_(batch), max_len_(max_len) {
  check(num_layers > 0 && batch > 0 && kv_heads > 0 && head_dim > 0 && max_len > 0, "KVCache",
        "sizes must be positive (layers ", num_layers, ", batch ", batch, ", kv heads ", kv_heads,
        ", head dim ", head_dim, ", max_len ", max_len, ")");
  layers_.reserve(static_cast<std::size_t>(num_layers));
  for (std::int64_t i = 0; i < num_layers; ++i) {
    const Tensor kv = Tensor::zeros({batch, 2, kv_heads, max_len, head_dim}, dt, dev);
    layers_.push_back({kv.select(1, 0), kv.select(1, 1), kv});
  }
}

DType KVCache::dtype() const {
  check(!layers_.empty(), "KVCache::dtype", "empty cache");
  return layers_.front().k.dtype();
}

Device KVCache::device() const {
  check(!layers_.empty(), "KVCache::device", "empty cache");
  return layers_.front().k.device();
}

void KVCache::check_room(std::int64_t t, const char* op) const {
  STRATA_CHECK(length_ + t <= max_len_, op, "the KV cache holds ", length_, " of ", max_len_,
               " positions; ", t, " more do not fit (make a longer cache or reset it)");
}

void KVCache::advance(std::int64_t t) {
  check_room(t, "KVCache::advance");
  length_ += t;
}

void KVCache::truncate(std::int64_t len) {
  check(len >= 0 && len <= length_, "KVCache::truncate", "length ", len, " outside [0, ", length_,
        "]");
  length_ = len;
}

// ---- MultiHeadAttention -----------------------------------------------------------
MultiHeadAttention::MultiHeadAttention(std::int64_t dim, std::int64_t h, std::int64_t hkv,
                                       std::int64_t hd, bool bias, std::optional<RotaryOptions> ro,
                                       DType dt, Device dev)
    : qkv(dim, (h + 2 * hkv) * hd, bias, dt, dev),
      out(h * hd, dim, bias, dt, dev),
      num_heads(h),
      num_kv_heads(hkv),
      head_dim(hd),
      rotary(ro) {
  check(h > 0 && hkv > 0 && hd > 0 && h % hkv == 0, "MultiHeadAttention", "num_kv_heads ", hkv,
        " must divide num_heads ", h, " (both positive), head_dim ", hd);
}

QKVViews MultiHeadAttention::split(const Tensor& y) const {
  STRATA_CHECK(y.dim() == 3 && y.size(2) == (num_heads + 2 * num_kv_heads) * head_dim,
               "MultiHeadAttention::split", "expected [B, T, ",
               (num_heads + 2 * num_kv_heads) * head_dim, "], got ", shape_str(y.shape()));
  const std::int64_t b = y.size(0), t = y.size(1);
  const std::int64_t nq = num_heads * head_dim, nkv = num_kv_heads * head_dim;
  auto heads = [&](std::int64_t start, std::int64_t n, std::int64_t nh) {
    return y.narrow(2, start, n).reshape({b, t, nh, head_dim}).transpose(1, 2);
  };
  return {heads(0, nq, num_heads), heads(nq, nkv, num_kv_heads),
          heads(nq + nkv, nkv, num_kv_heads)};
}

Tensor MultiHeadAttention::forward(const Tensor& x, const Tensor& positions, LayerCache* cache,
                                   std::int64_t cache_len, const MatmulOptions& opt) const {
  check(x.dim() == 3, "MultiHeadAttention::forward", "x must be [B, T, dim], got rank ", x.dim());
  const std::int64_t b = x.size(0), t = x.size(1);
  AttentionScratch s{
      Tensor::empty({b, t, qkv.out_features()}, x.dtype(), x.device()),
      Tensor::empty({b, t, num_heads * head_dim}, x.dtype(), x.device()),
  };
  Tensor y = Tensor::empty({b, t, out.out_features()}, x.dtype(), x.device());
  forward_out(y, x, positions, CacheSlot{cache, cache_len, Tensor()}, s, overwrite(opt));
  return y;
}

void MultiHeadAttention::forward_out(const Tensor& y, const Tensor& x, const Tensor& positions,
                                     const CacheSlot& slot, const AttentionScratch& s,
                                     const MatmulOptions& opt) const {
  const std::int64_t t = x.size(1);
  LayerCache* cache = slot.cache;
  const bool at_device_positions = cache != nullptr && slot.valid.defined();
  if (cache != nullptr && !at_device_positions) {
    // Checked before the projection runs, so a full cache changes nothing.
    STRATA_CHECK(slot.length >= 0 && slot.length + t <= cache->k.size(2),
                 "MultiHeadAttention::forward", "the KV cache holds ", slot.length, " of ",
                 cache->k.size(2), " positions; ", t, " more do not fit");
  }
  if (at_device_positions) {
    STRATA_CHECK(slot.valid.dim() == 1 && slot.valid.size(0) == cache->k.size(2) &&
                     slot.valid.dtype() == DType::boolean,
                 "MultiHeadAttention::forward", "valid must be bool [", cache->k.size(2),
                 "] (one flag per cache position), got ", dtype_name(slot.valid.dtype()), " ",
                 shape_str(slot.valid.shape()));
    STRATA_CHECK(t == 1, "MultiHeadAttention::forward",
                 "a step at device positions appends one token, got ", t);
  }
  qkv.forward_out(s.qkv, x, overwrite(opt));
  QKVViews v = split(s.qkv);
  const std::int64_t b = x.size(0), nq = num_heads * head_dim, nkv = num_kv_heads * head_dim;
  if (rotary) {
    // q's and k's heads are adjacent columns: one call rotates both.
    const Tensor qk =
        s.qkv.narrow(2, 0, nq + nkv).reshape({b, t, num_heads + num_kv_heads, head_dim});
    rotary_out(qk.transpose(1, 2), qk.transpose(1, 2), positions, *rotary, opt);
  }
  AttentionOptions ao;
  ao.causal = Causal::bottom_right;
  ao.backend = opt.backend;
  ao.stream = opt.stream;
  Tensor keys = v.k, values = v.v;
  if (cache != nullptr) {
    // The position dim of the cache (k: [B, Hkv, max, hd]; kv: [B, 2, Hkv, max, hd]).
    auto append = [&](const Tensor& dst, int dim, const Tensor& src) {
      if (at_device_positions)
        index_copy_(dst, dim, positions, src, opt);
      else
        copy_(dst.narrow(dim, slot.length, t), src, opt);
    };
    if (cache->kv.defined()) {
      // k's and v's heads are adjacent too: [B, T, 2, Hkv, hd] -> [B, 2, Hkv, T, hd].
      append(cache->kv, 3,
             s.qkv.narrow(2, nq, 2 * nkv)
                 .reshape({b, t, 2, num_kv_heads, head_dim})
                 .permute({0, 2, 3, 1, 4}));
    } else {
      append(cache->k, 2, v.k);
      append(cache->v, 2, v.v);
    }
    if (at_device_positions) {
      // The whole buffer, the unfilled tail masked: with T = 1 the causal
      // band is the mask itself (the new token sees every filled position).
      keys = cache->k;
      values = cache->v;
      ao.causal = Causal::none;
      ao.mask = slot.valid.reshape({1, 1, 1, slot.valid.size(0)});
    } else {
      keys = cache->k.narrow(2, 0, slot.length + t);
      values = cache->v.narrow(2, 0, slot.length + t);
    }
  }
  // [B, T, H hd] seen as [B, H, T, hd]: the kernel writes the layout the out
  // projection reads, so no transpose copy follows.
  const Tensor attn_view = s.attn.reshape({x.size(0), t, num_heads, head_dim}).transpose(1, 2);
  softmax_attention_out(attn_view, v.q, keys, values, ao);
  out.forward_out(y, s.attn, opt);  // accumulates into y when asked (a residual)
}

void MultiHeadAttention::visit_parameters(const std::string& prefix, const ParamVisitor& fn) {
  qkv.visit_parameters(join_name(prefix, "qkv"), fn);
  out.visit_parameters(join_name(prefix, "out"), fn);
}

}  // namespace strata::nn
