// Turns validated tensors into the plain AttentionArgs kernels receive: one
// Operand per tensor, laid out [batch..., heads, rows, cols] over the plan's
// broadcast batch, with broadcast dims as stride 0.
#include <tuple>

#include "strata/detail/attention_plan.hpp"

namespace strata::detail {
namespace {

// Operand of shape [1..., batch..., heads, rows, cols] (rank kMaxDims, the
// batch right-aligned in its slots) with every stride 0 and no data: what
// an absent lse or mask is, and where attention_operand starts.
Operand empty_operand(const Shape& batch, DType dt, std::int64_t heads, std::int64_t rows,
                      std::int64_t cols) {
  Operand x;
  x.dtype = dt;
  x.rank = kMaxDims;
  const int pad = kMaxBatchDims - static_cast<int>(batch.size());
  for (int i = 0; i < kMaxBatchDims; ++i)
    x.shape[i] = i < pad ? 1 : batch[static_cast<std::size_t>(i - pad)];
  x.shape[attn::kHeadDim] = heads;
  x.shape[attn::kRowDim] = rows;
  x.shape[attn::kColDim] = cols;
  return x;
}

// Tensor `t` seen as [batch..., heads, rows, cols]: its trailing dims are
// [heads,] rows[, cols] (`has_head`, `has_cols` say which it has), its
// leading dims right-align with the broadcast batch; missing and size-1 dims
// get stride 0.
Operand attention_operand(const Tensor& t, const Shape& batch, std::int64_t heads,
                          std::int64_t rows, std::int64_t cols, bool has_head, bool has_cols) {
  Operand x = empty_operand(batch, t.dtype(), heads, rows, cols);
  x.data = t.data_ptr();
  int at = t.dim() - 1;  // the tensor's dim being read, from the last
  if (has_cols) x.strides[attn::kColDim] = dim_stride(t, at--);
  x.strides[attn::kRowDim] = dim_stride(t, at--);
  if (has_head && dim_size(t, at) != 1) x.strides[attn::kHeadDim] = dim_stride(t, at);
  if (has_head) --at;
  // The tensor's own batch dims [0, at] end where the batch slots end.
  for (int ti = at, i = kMaxBatchDims - 1; ti >= 0; --ti, --i)
    if (dim_size(t, ti) != 1) x.strides[i] = dim_stride(t, ti);
  return x;
}

}  // namespace

AttentionArgs make_attention_args(const AttentionPlan& p, const Tensor& out, const Tensor& lse,
                                  const Tensor& q, const Tensor& k, const Tensor& v, void* stream) {
  AttentionArgs a;
  a.batch_rank = static_cast<int>(p.batch.size());
  for (int i = 0; i < a.batch_rank; ++i) a.batch_shape[i] = p.batch[i];
  std::tie(a.Hq, a.Hkv, a.M, a.N, a.d, a.dv) = std::tie(p.Hq, p.Hkv, p.M, p.N, p.d, p.dv);

  // q, k, v of rank 2 have no head dim; rank >= 3 always has one. out, lse
  // and the (expanded) mask have one exactly when the plan says so.
  const Shape& B = p.batch;
  a.q = attention_operand(q, B, p.Hq, p.M, p.d, q.dim() >= 3, true);
  a.k = attention_operand(k, B, p.Hkv, p.N, p.d, k.dim() >= 3, true);
  a.v = attention_operand(v, B, p.Hkv, p.N, p.dv, v.dim() >= 3, true);
  a.out = attention_operand(out, B, p.Hq, p.M, p.dv, p.has_head, true);
  // lse [batch..., H, M] gets a unit column dim (stride 0).
  a.lse = lse.defined() ? attention_operand(lse, B, p.Hq, p.M, 1, p.has_head, false)
                        : empty_operand(B, lse_dtype(q.dtype()), p.Hq, p.M, 1);
  a.mask = p.mask.defined() ? attention_operand(p.mask, B, p.Hq, p.M, p.N, p.has_head, true)
                            : empty_operand(B, DType::boolean, p.Hq, p.M, p.N);

  a.scale = p.scale;
  a.band_lo = p.band_lo;
  a.band_hi = p.band_hi;
  a.stream = stream;
  return a;
}

AttentionBackwardArgs make_attention_backward_args(const AttentionPlan& p, const Tensor& out,
                                                   const Tensor& lse, const Tensor& q,
                                                   const Tensor& k, const Tensor& v,
                                                   const Tensor& dout, const Tensor& dlse,
                                                   const Tensor& dq, const Tensor& dk,
                                                   const Tensor& dv, void* stream) {
  AttentionBackwardArgs g;
  g.fwd = make_attention_args(p, out, lse, q, k, v, stream);
  const Shape& B = p.batch;
  g.dout = attention_operand(dout, B, p.Hq, p.M, p.dv, p.has_head, true);
  g.dlse = dlse.defined() ? attention_operand(dlse, B, p.Hq, p.M, 1, p.has_head, false)
                          : empty_operand(B, lse.dtype(), p.Hq, p.M, 1);
  g.dq = attention_operand(dq, B, p.Hq, p.M, p.d, true, true);
  g.dk = attention_operand(dk, B, p.Hkv, p.N, p.d, true, true);
  g.dv = attention_operand(dv, B, p.Hkv, p.N, p.dv, true, true);
  return g;
}

}  // namespace strata::detail
