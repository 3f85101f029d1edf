// DecoderLM's training forward: the same maths as the inference path
// (decoder.cpp), written with fresh outputs so that a tape can record it.
// The inference path reuses one workspace for every layer and updates the
// residual stream in place, which would overwrite the activations the
// backward reads (the tape refuses that rather than give wrong gradients).
#include <variant>

#include "decoder_checks.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/decoder.hpp"

namespace strata::nn {

namespace {

Tensor norm_forward(const Norm& n, const Tensor& x, const OpOptions& opt) {
  return std::visit([&](const auto& m) { return m.forward(x, opt); }, n);
}

}  // namespace

Tensor TransformerBlock::forward(const Tensor& x, const Tensor& positions,
                                 const MatmulOptions& opt) const {
  const Tensor a = attn.forward(norm_forward(norm1, x, opt), positions, nullptr, 0, opt);
  const Tensor y = add(x, a, opt);
  const Tensor h = norm_forward(norm2, y, opt);
  const Tensor m = std::visit([&](const auto& f) { return f.forward(h, opt); }, mlp);
  return add(y, m, opt);
}

Tensor DecoderLM::forward_train(const Tensor& ids) {
  const MatmulOptions opt = overwrite(opt_);
  const Tensor x = hidden_states(ids, "DecoderLM::forward");
  const Tensor logits = linear(norm_forward(norm_f, x, opt), lm_head_weight(), Tensor(), opt);
  // f32 as the inference path gives, except an f64 model keeps f64 (what
  // gradient checks against finite differences need).
  const bool keep = logits.dtype() == DType::f32 || logits.dtype() == DType::f64;
  return keep ? logits : cast(logits, DType::f32, opt);
}

Tensor DecoderLM::hidden_states(const Tensor& ids_in, const char* op) {
  check_ids(ids_in, op);
  const std::int64_t t = ids_in.size(1);
  check_positions(cfg_, t, op);
  const MatmulOptions opt = overwrite(opt_);
  const Tensor ids = ids_in.device() == device_ ? ids_in : ids_in.to(device_);
  const Tensor pos = positions(t).narrow(0, 0, t);
  Tensor x = wte.forward(ids, opt);
  if (cfg_.arch == Arch::gpt2) x = add(x, wpe.weight.narrow(0, 0, t), opt);  // [T, D] over B
  for (const TransformerBlock& block : blocks) {
    if (recompute_blocks_) {
      // Runs again during backward, after this call returned: nothing here
      // is captured by reference but the block, which the model owns.
      x = autograd::checkpoint(
          [&block, pos, opt](const std::vector<Tensor>& in) {
            return block.forward(in[0], pos, opt);
          },
          {x});
    } else {
      x = block.forward(x, pos, opt);
    }
  }
  return x;
}

}  // namespace strata::nn
