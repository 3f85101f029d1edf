#pragma once
// One training step of a decoder language model on random tokens, shared by
// bench_train_cpu and bench_train_cuda (bench/peer_train.py times the same
// step in PyTorch): forward and DecoderLM::loss (the fused, chunked loss)
// under a tape, backward, clipping by global norm 1.0, one AdamW step
// (betas 0.9 / 0.95, eps 1e-8, weight decay 0.1 on the default groups:
// what nn::Trainer builds). The step is driven here rather than through
// nn::Trainer: the Trainer takes its loss from cross_entropy over the whole
// logits and its batches from a token stream it copies from the host every
// step, while this times the model's own fused loss on ids already on the
// device. As the Trainer does, the step reads the loss and the gradient
// norm back to the host.
//
// Throughput is tokens per second (items_per_second); flops per token are
// counted as nanoGPT's estimate_mfu (PaLM's appendix B) does:
// 6 N + 12 L H Q T, where N is every parameter except learned positions
// (a tied head counted once), L layers, H heads of Q, T the sequence
// length (the attention matmuls of forward and backward over the full
// T x T square, causal masking not discounted). MFU is that rate over a
// peak given by --peak_tflops=X or STRATA_PEAK_TFLOPS (counter "mfu"); the
// counter "tflops" is the achieved rate itself.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_model_config.hpp"
#include "strata/autograd.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/optim.hpp"

namespace strata::bench {

// GPT-2 124M: 12 layers, d 768, 12 heads of 64, GELU MLP 3072, vocabulary
// 50304 (50257 padded as nanoGPT and llm.c do), 1024 positions, tied head.
inline nn::ModelConfig gpt2_124m() {
  nn::ModelConfig c = model_config(nn::Arch::gpt2);
  c.vocab_size = 50304;
  c.hidden_size = 768;
  c.num_layers = 12;
  c.num_heads = c.num_kv_heads = 12;
  c.intermediate_size = 3072;
  c.max_position_embeddings = 1024;
  return c;
}

// The small CPU model: 4 layers, d 256, 4 heads of 64, vocabulary 256, in
// the benchmark model's style (Llama: 2 KV heads, SwiGLU 704; GPT-2: GELU
// 1024, biases, tied head).
inline nn::ModelConfig small_model(nn::Arch arch) {
  nn::ModelConfig c = model_config(arch);
  c.hidden_size = 256;
  c.num_layers = 4;
  c.num_heads = 4;
  c.num_kv_heads = arch == nn::Arch::llama ? 2 : 4;
  c.intermediate_size = arch == nn::Arch::llama ? 704 : 1024;
  return c;
}

// The peak for MFU in TFLOP/s: --peak_tflops=X (taken out of argv so that
// Google Benchmark does not see it), else STRATA_PEAK_TFLOPS, else 0 (no
// MFU counter).
inline double& peak_tflops() {
  static double peak = [] {
    const char* e = std::getenv("STRATA_PEAK_TFLOPS");
    return e ? std::atof(e) : 0.0;
  }();
  return peak;
}

inline void take_peak_flag(int& argc, char** argv) {
  const char* flag = "--peak_tflops=";
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], flag, std::strlen(flag)) == 0)
      peak_tflops() = std::atof(argv[i] + std::strlen(flag));
    else
      argv[out++] = argv[i];
  }
  argc = out;
}

class TrainStep {
 public:
  TrainStep(const nn::ModelConfig& cfg, DType dt, Device dev, std::int64_t batch, std::int64_t seq,
            const std::string& backend, std::uint64_t seed = 1)
      : model_(cfg, dt, dev), batch_(batch), seq_(seq) {
    nn::init_normal(model_, seed, 0.02);
    model_.options().backend = backend;
    // Random tokens, inputs and next-token targets from one stream.
    std::vector<std::int64_t> in(static_cast<std::size_t>(batch * seq)), tgt(in.size());
    std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    auto next = [&] {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return static_cast<std::int64_t>((s >> 33) % static_cast<std::uint64_t>(cfg.vocab_size));
    };
    for (std::int64_t b = 0; b < batch; ++b) {
      std::int64_t prev = next();
      for (std::int64_t t = 0; t < seq; ++t) {
        const auto k = static_cast<std::size_t>(b * seq + t);
        in[k] = prev;
        tgt[k] = prev = next();
      }
    }
    ids_ = Tensor::from_vector(in, {batch, seq}).to(dev);
    targets_ = Tensor::from_vector(tgt, {batch, seq}).to(dev);
    nn::AdamWOptions a;
    a.beta1 = 0.9;
    a.beta2 = 0.95;
    a.eps = 1e-8;
    a.weight_decay = 0.1;
    a.op = op();
    optim_ = std::make_unique<nn::AdamW>(model_, a);
  }

  // Clipping at global norm 1.0 as the Trainer does it: the norm, and the
  // coefficient the optimizer applies as it reads the gradients.
  double clip_scale() {
    last_grad_norm_ = nn::grad_norm(model_, op());
    return nn::clip_coefficient(last_grad_norm_, 1.0);
  }

  // One step; returns the loss (read back, as the Trainer's log does).
  double run(double lr = 6e-4) {
    model_.zero_grad();
    Tensor loss;
    {
      autograd::Tape tape;
      model_.watch(tape);
      loss = model_.loss(ids_, targets_);
      tape.backward(loss);
    }
    const double value = loss.to(Device::cpu()).item<double>();
    optim_->step(lr, clip_scale());
    return value;
  }

  // One more step timed by phase, each ended by `sync` (the device's), as
  // counters fwd_ms (forward with the loss), bwd_ms, clip_ms, optim_ms: where
  // a slow step goes. Not part of the timed loop (the syncs stall it). Then
  // one more backward profiled by op (Tape::profile_backward): the eight
  // dearest ops as counters bwd:<op>_ms and a table on stderr.
  void time_phases(benchmark::State& st, const std::function<void()>& sync) {
    using clock = std::chrono::steady_clock;
    const auto ms = [](clock::time_point a, clock::time_point b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    model_.zero_grad();
    sync();
    const auto t0 = clock::now();
    autograd::Tape tape;
    model_.watch(tape);
    const Tensor loss = model_.loss(ids_, targets_);
    sync();
    const auto t1 = clock::now();
    tape.backward(loss);
    sync();
    const auto t2 = clock::now();
    const double scale = clip_scale();
    sync();
    const auto t3 = clock::now();
    optim_->step(6e-4, scale);
    sync();
    const auto t4 = clock::now();
    st.counters["fwd_ms"] = ms(t0, t1);
    st.counters["bwd_ms"] = ms(t1, t2);
    st.counters["clip_ms"] = ms(t2, t3);
    st.counters["optim_ms"] = ms(t3, t4);
    model_.zero_grad();
    autograd::Tape profiled;
    model_.watch(profiled);
    profiled.profile_backward();
    profiled.backward(model_.loss(ids_, targets_));
    const std::vector<autograd::OpTime> ops = profiled.backward_profile();
    std::fprintf(stderr, "%lld x %lld tokens: backward by op (synchronised after each node)\n",
                 static_cast<long long>(batch_), static_cast<long long>(seq_));
    for (std::size_t k = 0; k < ops.size(); ++k) {
      std::fprintf(stderr, "  %-28s %9.3f ms  %5lld calls\n", ops[k].op.c_str(), ops[k].ms,
                   static_cast<long long>(ops[k].calls));
      if (k < 8) st.counters["bwd:" + ops[k].op + "_ms"] = ops[k].ms;
    }
  }

  nn::DecoderLM& model() { return model_; }
  double last_grad_norm() const { return last_grad_norm_; }
  std::int64_t tokens() const { return batch_ * seq_; }

  // Parameters as nanoGPT counts them: all but learned positions.
  std::int64_t counted_params() {
    const nn::ModelConfig& c = model_.config();
    const std::int64_t wpe =
        c.arch == nn::Arch::gpt2 ? c.max_position_embeddings * c.hidden_size : 0;
    return model_.num_parameters() - wpe;
  }
  double flops_per_token() {
    const nn::ModelConfig& c = model_.config();
    return 6.0 * static_cast<double>(counted_params()) +
           12.0 * static_cast<double>(c.num_layers * c.num_heads * c.head_dim * seq_);
  }

  // tokens/s as items_per_second, the achieved TFLOP/s and (with a peak) MFU,
  // all over the benchmark's own time (real or manual).
  void set_counters(benchmark::State& st) {
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * tokens());
    const double tflop = flops_per_token() * static_cast<double>(tokens()) / 1e12;
    st.counters["tflops"] =
        benchmark::Counter(tflop, benchmark::Counter::kIsIterationInvariantRate);
    if (peak_tflops() > 0) {
      st.counters["mfu"] =
          benchmark::Counter(tflop / peak_tflops(), benchmark::Counter::kIsIterationInvariantRate);
      st.counters["peak_tflops"] = peak_tflops();
    }
    st.counters["params_M"] = static_cast<double>(model_.num_parameters()) / 1e6;
    st.counters["batch"] = static_cast<double>(batch_);
    st.counters["seq"] = static_cast<double>(seq_);
    st.counters["grad_norm"] = last_grad_norm_;
  }

 private:
  OpOptions op() const {
    OpOptions o;
    o.backend = model_.options().backend;
    o.stream = model_.options().stream;
    return o;
  }

  nn::DecoderLM model_;
  std::int64_t batch_, seq_;
  Tensor ids_, targets_;
  std::unique_ptr<nn::AdamW> optim_;
  double last_grad_norm_ = 0;
};

}  // namespace strata::bench
