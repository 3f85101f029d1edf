// The training step: micro-batches with gradient accumulation, clipping, the
// schedule and the optimizer; validation on the held-out tail
// (strata/nn/train.hpp).
#include <chrono>
#include <cmath>
#include <limits>
#include <string>

#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/error.hpp"
#include "strata/nn/train.hpp"

namespace strata::nn {
namespace {

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("train: " + what);
}

void check_options(const TrainOptions& o, const DecoderLM& m) {
  require(o.seq_len >= 1, "--seq-len " + std::to_string(o.seq_len) + " must be >= 1");
  require(o.batch >= 1, "--batch " + std::to_string(o.batch) + " must be >= 1");
  require(o.accum >= 1, "--accum " + std::to_string(o.accum) + " must be >= 1");
  require(o.steps >= 1, "--steps " + std::to_string(o.steps) + " must be >= 1");
  require(std::isfinite(o.lr) && o.lr > 0, "--lr " + num(o.lr) + " must be a positive number");
  require(std::isfinite(o.min_lr) && o.min_lr >= 0 && o.min_lr <= o.lr,
          "--min-lr " + num(o.min_lr) + " must be in [0, --lr]");
  require(o.warmup >= 0, "--warmup " + std::to_string(o.warmup) + " must be >= 0");
  require(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
          "--weight-decay " + num(o.weight_decay) + " must be >= 0");
  require(std::isfinite(o.clip) && o.clip >= 0, "--clip " + num(o.clip) + " must be >= 0 (0: off)");
  require(o.dtype == DType::f32 || o.dtype == DType::bf16,
          "dtype " + std::string(dtype_name(o.dtype)) + ": expected f32 or bf16");
  require(m.dtype() == o.dtype, "the model's parameters are " + std::string(dtype_name(m.dtype())) +
                                    " but the options' dtype is " +
                                    std::string(dtype_name(o.dtype)));
  require(o.optimizer == "adamw" || o.optimizer == "sgd",
          "--optimizer '" + o.optimizer + "': expected adamw or sgd");
  require(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1,
          "--momentum " + num(o.momentum) + " must be in [0, 1)");
  require(!o.nesterov || (o.optimizer == "sgd" && o.momentum > 0),
          "--nesterov needs --optimizer sgd and --momentum > 0 (got " + o.optimizer +
              ", momentum " + num(o.momentum) + ")");
  require(o.val_fraction >= 0 && o.val_fraction < 1,
          "--val-fraction " + num(o.val_fraction) + " must be in [0, 1)");
  require(o.val_every >= 0, "--val-every " + std::to_string(o.val_every) + " must be >= 0");
  require(o.val_batches >= 1, "val_batches " + std::to_string(o.val_batches) + " must be >= 1");
  const std::int64_t ctx = m.config().max_position_embeddings;
  require(o.seq_len <= ctx, "--seq-len " + std::to_string(o.seq_len) +
                                " is past the model's context of " + std::to_string(ctx) +
                                " (max_position_embeddings)");
}

}  // namespace

Trainer::Trainer(DecoderLM& model, const TokenData& data, const TrainOptions& opt)
    : model_(&model), data_(&data), opt_(opt) {
  check_options(opt, model);
  const auto n = static_cast<std::int64_t>(data.ids.size());
  const auto n_val =
      static_cast<std::int64_t>(std::floor(static_cast<double>(n) * opt.val_fraction));
  n_train_ = n - n_val;
  if (n_train_ < opt.seq_len + 2)
    throw Error("train: --seq-len " + std::to_string(opt.seq_len) + " needs at least " +
                std::to_string(opt.seq_len + 2) + " training tokens; '" + data.path + "' has " +
                std::to_string(n_train_) +
                (n_val > 0 ? " after the validation tail of " + std::to_string(n_val) : ""));
  if (n_val > 0 && n_val < opt.seq_len + 1)
    throw Error("train: --val-fraction " + num(opt.val_fraction) + " holds out " +
                std::to_string(n_val) + " tokens, fewer than one sequence of --seq-len " +
                std::to_string(opt.seq_len) + " + 1");
  const std::int64_t vocab = model.config().vocab_size;
  for (std::size_t k = 0; k < data.ids.size(); ++k)
    if (data.ids[k] >= vocab)
      throw Error("train: token id " + std::to_string(data.ids[k]) + " at position " +
                  std::to_string(k) + " of '" + data.path + "' is past the model's vocab_size " +
                  std::to_string(vocab));
  order_ = std::make_unique<BatchOrder>(n_train_, opt.seq_len, opt.order, opt.seed);
  OpOptions op;
  op.backend = model.options().backend;
  op.stream = model.options().stream;
  if (opt.optimizer == "adamw") {
    AdamWOptions a;
    a.beta1 = 0.9;
    a.beta2 = 0.95;
    a.eps = 1e-8;
    a.weight_decay = opt.weight_decay;
    a.op = op;
    optim_ = std::make_unique<AdamW>(model, a);
  } else {
    SGDOptions s;
    s.momentum = opt.momentum;
    s.nesterov = opt.nesterov;
    s.weight_decay = opt.weight_decay;
    s.op = op;
    optim_ = std::make_unique<SGD>(model, s);
  }
}

Trainer::~Trainer() = default;

// Rows [first, first + rows) of the order (train) or the validation tail's
// windows from `first` (validation): the mean cross entropy (0-d f32, on the
// model's device: read once per step, not once per micro-batch), and with
// `train` its gradient scaled by 1/K added into the model's. The loss is
// DecoderLM::loss, the fused chunked head + cross entropy: it never holds
// the logits of the whole micro-batch.
Tensor Trainer::micro_batch_loss(std::int64_t first, bool train) {
  const std::int64_t t = opt_.seq_len;
  const std::int64_t rows =
      train ? opt_.batch : std::min(opt_.batch, (val_tokens() - 1) / t - first);  // windows left
  std::vector<std::int64_t> in(static_cast<std::size_t>(rows * t)), tgt(in.size());
  for (std::int64_t b = 0; b < rows; ++b) {
    const std::int64_t at = train ? order_->offset(first + b) : n_train_ + (first + b) * t;
    for (std::int64_t k = 0; k < t; ++k) {
      in[static_cast<std::size_t>(b * t + k)] = data_->ids[static_cast<std::size_t>(at + k)];
      tgt[static_cast<std::size_t>(b * t + k)] = data_->ids[static_cast<std::size_t>(at + k + 1)];
    }
  }
  const Tensor ids = Tensor::from_vector(in, {rows, t});
  const Tensor target = Tensor::from_vector(tgt, {rows, t}).to(model_->device());
  if (!train) {
    autograd::NoGrad no_grad;
    return model_->loss(ids, target);
  }
  autograd::Tape tape;
  model_->watch(tape);
  const Tensor loss = model_->loss(ids, target);
  tape.backward(mul(loss, 1.0 / static_cast<double>(opt_.accum), op_options()));
  return loss;
}

OpOptions Trainer::op_options() const {
  OpOptions op;
  op.backend = model_->options().backend;
  op.stream = model_->options().stream;
  return op;
}

double Trainer::mean_loss(std::int64_t first, std::int64_t count, std::int64_t stride, bool train) {
  Tensor sum;
  for (std::int64_t k = 0; k < count; ++k) {
    const Tensor l = micro_batch_loss(first + k * stride, train);
    sum = k == 0 ? l : add(sum, l, op_options());
  }
  return sum.to(Device::cpu()).item<double>() / static_cast<double>(count);
}

StepStats Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  const std::int64_t s = step_;
  StepStats st;
  st.step = s + 1;
  st.val_loss = std::numeric_limits<double>::quiet_NaN();
  model_->zero_grad();
  st.loss = mean_loss(s * opt_.accum * opt_.batch, opt_.accum, opt_.batch, true);
  if (!std::isfinite(st.loss))
    throw Error("train: step " + std::to_string(st.step) + ": the loss is " + num(st.loss) +
                " (not finite); training stopped");
  const OpOptions op = op_options();
  // Clipping as torch.nn.utils.clip_grad_norm_, its coefficient applied by
  // the optimizer as it reads each gradient (the same rounded products a
  // separate scaling pass would store) rather than in a pass of its own.
  st.grad_norm = grad_norm(*model_, op);
  if (!std::isfinite(st.grad_norm))
    throw Error("train: step " + std::to_string(st.step) + ": the gradient norm is " +
                num(st.grad_norm) + " (not finite); training stopped");
  const LrSchedule sched{opt_.schedule, opt_.lr, opt_.min_lr, opt_.warmup, opt_.steps};
  st.lr = sched.at(s);
  optim_->step(st.lr, opt_.clip > 0 ? clip_coefficient(st.grad_norm, opt_.clip) : 1.0);
  step_ = s + 1;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  st.tokens_per_s =
      static_cast<double>(opt_.batch * opt_.accum * opt_.seq_len) / std::max(secs, 1e-9);
  return st;
}

double Trainer::validate() {
  const std::int64_t windows = (val_tokens() - 1) / opt_.seq_len;
  if (val_tokens() == 0 || windows < 1)
    throw Error("train: no validation data (--val-fraction " + num(opt_.val_fraction) + ")");
  const std::int64_t batches = std::min(opt_.val_batches, (windows + opt_.batch - 1) / opt_.batch);
  return mean_loss(0, batches, opt_.batch, false);
}

}  // namespace strata::nn
