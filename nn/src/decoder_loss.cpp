// DecoderLM::loss: the final norm, the head and cross_entropy fused over
// chunks of rows, as llm.c does, so that the logits of the whole batch
// (B T x V, the largest activation of a small model by far) never exist at
// once. The forward keeps each row's log-sum-exp; under a tape the three
// steps are recorded as one node whose backward recomputes a chunk's logits,
// turns them into g (softmax - onehot) (cross_entropy_backward_out), adds
// that chunk's share of the head's gradient (a GEMM with beta = 1 straight
// into the weight's gradient, so a tied head adds into the embedding
// table's) and writes its rows of the hidden states' gradient, then runs the
// final norm's backward once over every row. Only ops are called: the same
// code runs on every backend. docs/guide/training.md, "The language-model loss".
#include <algorithm>
#include <string>
#include <utility>
#include <variant>

#include "strata/cross_entropy.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"

namespace strata::nn {

namespace {

// The final norm as the node saves it: its tensors, not the module, so that
// the backward reads what the forward read (the tape checks they were not
// overwritten since).
struct NormParams {
  bool layer = false;  // LayerNorm, else RMSNorm
  Tensor weight, bias;
  double eps = 0;
};

NormParams norm_params(const Norm& n) {
  if (const auto* ln = std::get_if<LayerNorm>(&n)) return {true, ln->weight, ln->bias, ln->eps};
  const auto& rn = std::get<RMSNorm>(n);
  return {false, rn.weight, Tensor(), rn.eps};
}

void norm_rows(const NormParams& p, const Tensor& out, const Tensor& x, const OpOptions& opt) {
  if (p.layer) {
    layer_norm_out(out, x, p.weight, p.bias, p.eps, opt);
  } else {
    rms_norm_out(out, x, p.weight, p.eps, opt);
  }
}

// Rows per chunk: the caller's, else about 128 MiB of logits and at least 64
// rows, never more than there are. Few chunks matter: the backward reads and
// writes the head's whole gradient once per chunk (GPT-2's batch of 16384
// rows at 32 MiB chunks: 50 passes over a 50304 x 768 gradient), and the
// head's GEMMs want rows.
std::int64_t chunk_of(std::int64_t asked, std::int64_t rows, std::int64_t vocab, DType dt) {
  if (asked > 0) return std::min(asked, rows);
  const std::int64_t row_bytes = vocab * static_cast<std::int64_t>(itemsize(dt));
  return std::min(rows, std::max<std::int64_t>(64, (std::int64_t(128) << 20) / row_bytes));
}

// t with shape s: a view when the strides allow, else a copy.
Tensor reshaped(const Tensor& t, const Shape& s) {
  return t.is_contiguous() ? t.reshape(s) : t.reshape_copy(s);
}

// [..., n] as [rows, n].
Tensor as_rows(const Tensor& t) { return reshaped(t, {-1, t.size(-1)}); }

// What the node's backward needs besides the saved tensors.
struct Plan {
  NormParams norm;  // weight and bias are saved; layer and eps are read here
  std::int64_t chunk = 0;
  std::int64_t ignore_index = -100;
  MatmulOptions opt;  // the model's backend and f32 matmul precision
};

// The backward (see the top of the file). saved: x [B, T, D], the norm's
// weight and bias, the head's weight [V, D], targets [N], lse [N], count [].
void loss_backward(autograd::GradContext& c, const Plan& plan) {
  const Tensor& g_out = c.grad_out(0);
  if (!g_out.defined()) return;
  const Tensor &x = c.saved(0), &w = c.saved(3), &targets = c.saved(4), &lse = c.saved(5);
  NormParams norm = plan.norm;
  norm.weight = c.saved(1);
  norm.bias = c.saved(2);
  MatmulOptions m = plan.opt;
  m.backend = c.options().backend;
  m.stream = c.options().stream;
  MatmulOptions acc = m;
  acc.accumulate = true;

  const Tensor g = div(g_out, c.saved(6), m);  // the mean's gradient per row, 0-d
  const Tensor xr = as_rows(x);
  const std::int64_t rows = xr.size(0), d = xr.size(1), vocab = w.size(0);
  const bool want_w = c.needs(3), want_h = c.needs(0) || c.needs(1) || c.needs(2);
  if (!want_w && !want_h) return;
  // The head's gradient: its gradient memory itself where the tape gives a
  // plain view, else a buffer of ours added in at the end. Unwritten memory
  // (the head's first contribution, or ours) takes the first chunk's
  // product with beta = 0, later chunks add.
  bool dw_fresh = false;
  Tensor dw = want_w ? c.grad_view(3, dw_fresh) : Tensor();
  Tensor dw_own;
  if (want_w && !dw.defined()) {
    dw_own = Tensor::empty(w.shape(), w.dtype(), w.device());
    dw = dw_own;
    dw_fresh = true;
  }
  if (dw_fresh && rows == 0) fill_(dw, 0.0, m);
  const Tensor dh = want_h ? Tensor::empty({rows, d}, x.dtype(), x.device()) : Tensor();
  const std::int64_t chunk = plan.chunk;
  const Tensor h_buf = Tensor::empty({chunk, d}, x.dtype(), x.device());
  const Tensor logits_buf = Tensor::empty({chunk, vocab}, w.dtype(), w.device());
  const Tensor dlogits_buf = Tensor::empty({chunk, vocab}, w.dtype(), w.device());
  for (std::int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const std::int64_t n = std::min(chunk, rows - r0);
    const Tensor h = h_buf.narrow(0, 0, n), logits = logits_buf.narrow(0, 0, n);
    const Tensor dlogits = dlogits_buf.narrow(0, 0, n);
    norm_rows(norm, h, xr.narrow(0, r0, n), m);
    linear_out(logits, h, w, Tensor(), m);
    cross_entropy_backward_out(dlogits, g, logits, targets.narrow(0, r0, n), lse.narrow(0, r0, n),
                               plan.ignore_index, false, m);
    if (want_w) matmul_out(dw, dlogits.transpose(0, 1), h, dw_fresh && r0 == 0 ? m : acc);
    if (want_h) matmul_out(dh.narrow(0, r0, n), dlogits, w, m);  // dh = dlogits W
  }
  if (dw_own.defined()) c.accumulate(3, std::move(dw_own));
  if (!want_h) return;
  const NormGrads ng = norm.layer ? layer_norm_backward(dh, xr, norm.weight, norm.eps, m)
                                  : rms_norm_backward(dh, xr, norm.weight, norm.eps, m);
  if (c.needs(0)) c.accumulate(0, ng.dx.reshape(x.shape()));
  if (c.needs(1) && ng.dweight.defined()) c.accumulate(1, ng.dweight);
  if (c.needs(2) && ng.dbias.defined()) c.accumulate(2, ng.dbias);
}

}  // namespace

Tensor lm_loss(const Tensor& hidden, const Norm& norm_f, const Tensor& w, const Tensor& targets_in,
               const LossOptions& lo, const MatmulOptions& mopt) {
  const char* op = "nn::lm_loss";
  STRATA_CHECK(hidden.defined() && hidden.dim() >= 1, op, "hidden must be [..., D]");
  STRATA_CHECK(w.defined() && w.dim() == 2 && w.size(1) == hidden.size(-1), op,
               "head_weight must be [V, ", hidden.size(-1), "], got ",
               w.defined() ? shape_str(w.shape()) : std::string("(undefined)"));
  STRATA_CHECK(w.dtype() == hidden.dtype() && w.device() == hidden.device(), op, "head_weight is ",
               dtype_name(w.dtype()), " on ", w.device().str(), " but hidden is ",
               dtype_name(hidden.dtype()), " on ", hidden.device().str());
  Shape rows_shape = hidden.shape();
  rows_shape.pop_back();
  STRATA_CHECK(targets_in.defined() && targets_in.shape() == rows_shape, op, "targets has shape ",
               targets_in.defined() ? shape_str(targets_in.shape()) : std::string("(undefined)"),
               " but must be ", shape_str(rows_shape), " (hidden's without the last dim)");
  STRATA_CHECK(is_integer(targets_in.dtype()), op, "targets must be i32 or i64, got ",
               dtype_name(targets_in.dtype()));
  STRATA_CHECK(lo.chunk_rows >= 0, op, "chunk_rows must be >= 0 (0: automatic), got ",
               lo.chunk_rows);
  const MatmulOptions opt = overwrite(mopt);
  const Device dev = hidden.device();
  const Tensor& x = hidden;
  const Tensor targets =
      reshaped(targets_in.device() == dev ? targets_in : targets_in.to(dev), {-1});
  const NormParams norm = norm_params(norm_f);
  const Tensor xr = as_rows(x);
  const std::int64_t rows = xr.size(0), d = xr.size(1), vocab = w.size(0);
  STRATA_CHECK(rows > 0, op, "hidden has no rows (shape ", shape_str(hidden.shape()), ")");
  const std::int64_t chunk = chunk_of(lo.chunk_rows, rows, vocab, w.dtype());
  const std::int64_t chunks = (rows + chunk - 1) / chunk;
  // Per-row statistics and the loss in cross_entropy's dtype: f64 for an
  // f64 model, else f32.
  const DType sdt = w.dtype() == DType::f64 ? DType::f64 : DType::f32;
  const Tensor lse = Tensor::empty({rows}, sdt, dev);
  const Tensor sums = Tensor::empty({chunks}, sdt, dev);
  Tensor count, loss;
  {
    const autograd::NoGrad inside;  // recorded below as one node
    const Tensor h_buf = Tensor::empty({chunk, d}, x.dtype(), dev);
    const Tensor logits_buf = Tensor::empty({chunk, vocab}, w.dtype(), dev);
    CrossEntropyOptions ce;
    ce.ignore_index = lo.ignore_index;
    ce.reduction = CrossEntropyOptions::Reduction::sum;
    for (std::int64_t i = 0; i < chunks; ++i) {
      const std::int64_t r0 = i * chunk, n = std::min(chunk, rows - r0);
      const Tensor h = h_buf.narrow(0, 0, n), logits = logits_buf.narrow(0, 0, n);
      norm_rows(norm, h, xr.narrow(0, r0, n), opt);
      linear_out(logits, h, w, Tensor(), opt);
      cross_entropy_out(sums.select(0, i), logits, targets.narrow(0, r0, n), ce, opt,
                        lse.narrow(0, r0, n));
    }
    // mean: over the rows not ignored; all ignored gives 0 / 0 = NaN, as
    // cross_entropy's mean (and PyTorch's) does.
    count =
        sum(cast(ne(targets, static_cast<double>(lo.ignore_index), opt), sdt, opt), 0, false, opt);
    loss = div(sum(sums, 0, false, opt), count, opt);
  }
  if (autograd::TapeState* tape = autograd::detail::recording_tape()) {
    Plan plan{norm, chunk, lo.ignore_index, opt};
    autograd::detail::record(
        *tape, "nn::lm_loss", {&x, &norm.weight, &norm.bias, &w}, {&loss},
        {x, norm.weight, norm.bias, w, targets, lse, count},
        [plan](autograd::GradContext& c) { loss_backward(c, plan); }, opt);
  }
  return loss;
}

Tensor DecoderLM::loss(const Tensor& ids, const Tensor& targets, const LossOptions& lo) {
  const char* op = "DecoderLM::loss";
  STRATA_CHECK(targets.defined() && ids.defined() && targets.shape() == ids.shape(), op,
               "targets has shape ",
               targets.defined() ? shape_str(targets.shape()) : std::string("(undefined)"),
               " but must be ids' ", ids.defined() ? shape_str(ids.shape()) : std::string("[]"));
  STRATA_CHECK(is_integer(targets.dtype()), op, "targets must be i32 or i64, got ",
               dtype_name(targets.dtype()));
  STRATA_CHECK(lo.chunk_rows >= 0, op, "chunk_rows must be >= 0 (0: automatic), got ",
               lo.chunk_rows);
  // The residual stream after the last block (recorded when a tape records).
  const Tensor x = hidden_states(ids, op);
  return lm_loss(x, norm_f, lm_head_weight(), targets, lo, opt_);
}

}  // namespace strata::nn
