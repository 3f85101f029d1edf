// Turns validated tensors into the plain AttentionArgs kernels receive:
// batch dims broadcast with zero strides, a missing head dim as stride 0.
#include "strata/detail/attention_plan.hpp"

namespace strata::detail {
namespace {

// Strides of tensor `t` laid out as [batch..., H, rows, cols] against the
// plan's batch shape: `core` trailing dims are taken from the tensor (the
// head dim only when the tensor has one), leading dims right-aligned with
// the broadcast batch, size-1 or missing dims become stride 0.
void split_strides(const Tensor& t, const Shape& batch, int core, std::int64_t* bs,
                   std::int64_t* head, std::int64_t* rows, std::int64_t* cols) {
  const int r = t.dim();
  const int tail = core;  // dims after the batch dims: [H,] rows, cols
  *cols = dim_stride(t, r - 1);
  *rows = dim_stride(t, r - 2);
  *head = 0;
  if (tail == 3 && r >= 3 && dim_size(t, r - 3) != 1) *head = dim_stride(t, r - 3);
  const int tb = r - tail;  // the tensor's own batch dims
  const int B = static_cast<int>(batch.size());
  for (int i = 0; i < B; ++i) {
    const int ti = i - (B - tb);
    bs[i] = (ti >= 0 && dim_size(t, ti) != 1) ? dim_stride(t, ti) : 0;
  }
}

}  // namespace

AttentionArgs make_attention_args(const AttentionPlan& p, const Tensor& out, const Tensor& lse,
                                  const Tensor& q, const Tensor& k, const Tensor& v, void* stream) {
  AttentionArgs a;
  a.dtype = q.dtype();
  a.batch_rank = static_cast<int>(p.batch.size());
  for (int i = 0; i < a.batch_rank; ++i) a.batch_shape[i] = p.batch[i];
  a.Hq = p.Hq;
  a.Hkv = p.Hkv;
  a.M = p.M;
  a.N = p.N;
  a.d = p.d;
  a.dv = p.dv;

  // q, k, v of rank 2 have no head dim; rank >= 3 always has one.
  auto core_of = [](const Tensor& t) { return t.dim() >= 3 ? 3 : 2; };
  a.q = q.data_ptr();
  split_strides(q, p.batch, core_of(q), a.q_bs, &a.q_hs, &a.q_ms, &a.q_ds);
  a.k = k.data_ptr();
  split_strides(k, p.batch, core_of(k), a.k_bs, &a.k_hs, &a.k_ns, &a.k_ds);
  a.v = v.data_ptr();
  split_strides(v, p.batch, core_of(v), a.v_bs, &a.v_hs, &a.v_ns, &a.v_ds);

  a.out = out.data_ptr();
  split_strides(out, p.batch, p.has_head ? 3 : 2, a.o_bs, &a.o_hs, &a.o_ms, &a.o_ds);
  if (lse.defined()) {
    // lse [batch..., H, M] splits like a [batch..., H, M, 1] tensor would.
    a.lse = lse.data_ptr();
    const int r = lse.dim();
    const int tail = p.has_head ? 2 : 1;  // [H,] M
    a.l_ms = dim_stride(lse, r - 1);
    a.l_hs = p.has_head && dim_size(lse, r - 2) != 1 ? dim_stride(lse, r - 2) : 0;
    const int B = a.batch_rank;
    for (int i = 0; i < B; ++i) {
      const int ti = i - (B - (r - tail));
      a.l_bs[i] = (ti >= 0 && dim_size(lse, ti) != 1) ? dim_stride(lse, ti) : 0;
    }
  }
  if (p.mask.defined()) {
    a.mask = p.mask.data_ptr();
    a.mask_dtype = p.mask.dtype();
    split_strides(p.mask, p.batch, p.has_head ? 3 : 2, a.mk_bs, &a.mk_hs, &a.mk_ms, &a.mk_ns);
  }

  a.scale = p.scale;
  a.band_lo = p.band_lo;
  a.band_hi = p.band_hi;
  a.stream = stream;
  return a;
}

}  // namespace strata::detail
