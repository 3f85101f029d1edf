// DecoderLM under autograd: its training forward (fresh outputs, recorded)
// gives the inference path's logits, its parameter gradients match central
// finite differences in f64 on Llama and GPT-2 layouts (GQA, rotary, tied
// and learned positions), recomputing blocks gives the same gradients, and a
// KV cache under a tape is refused.
#include <cmath>
#include <string>

#include "catch.hpp"
#include "finite_diff.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"
#include "test_nn_util.hpp"

using namespace strata;

namespace {

Tensor total(Tensor t) {
  while (t.dim() > 0) t = sum(t, 0);
  return t;
}

// A loss that weighs every logit differently, so that no gradient is
// trivially zero or symmetric. Under a tape (never run backward) the f64
// model's logits stay f64: inference would round them to f32.
double loss_of(nn::DecoderLM& m, const Tensor& ids, const Tensor& w) {
  autograd::Tape tape;
  return total(mul(m.forward(ids), w)).item({});
}

nn::DecoderLM f64_model(const nn::ModelConfig& c, const char* backend) {
  nn::DecoderLM m(c, DType::f64);
  nn::init_normal(m, 31, 0.3);
  m.options().backend = backend;
  return m;
}

}  // namespace

TEST_CASE("autograd model: DecoderLM's gradients match finite differences",
          "[autograd][nn][model]") {
  const nn::ModelConfig configs[] = {nn_test::tiny_llama(2), nn_test::tiny_gpt2()};
  for (const nn::ModelConfig& c : configs) {
    for (const char* backend : nn_test::kBackends) {
      INFO((c.arch == nn::Arch::gpt2 ? "gpt2" : "llama") << " on " << backend);
      nn::DecoderLM m = f64_model(c, backend);
      const Tensor ids = nn_test::ids_tensor({3, 17, 42, 5, 9, 60, 1, 33}, 2);
      const Tensor w = Tensor::randn({2, 4, c.vocab_size}, 32, DType::f64);
      {
        autograd::Tape tape;
        m.watch(tape);
        const Tensor logits = m.forward(ids);
        REQUIRE(logits.dtype() == DType::f64);
        {  // The recorded forward computes what inference computes.
          autograd::NoGrad pause;
          CHECK(nn_test::rel_err(logits.to(DType::f32), m.forward(ids)) < 1e-5);
        }
        tape.backward(total(mul(logits, w)));
      }
      int checked = 0;
      for (const auto& [name, param] : m.named_parameters()) {
        const Tensor g = m.grad(name).reshape({-1});
        const Tensor flat = param->reshape({-1});
        // A few elements per tensor, spread over it.
        const std::int64_t step = std::max<std::int64_t>(1, flat.numel() / 3);
        for (std::int64_t e = 1; e < flat.numel(); e += step) {
          const double fd =
              fd_test::central_difference(flat, e, 1e-5, [&] { return loss_of(m, ids, w); });
          INFO(name << "[" << e << "] tape " << g.item({e}) << " finite differences " << fd);
          CHECK(std::abs(g.item({e}) - fd) < 1e-6 * (1 + std::abs(fd)));
          ++checked;
        }
      }
      CHECK(checked > 40);
    }
  }
}

TEST_CASE("autograd model: recomputing blocks gives the same gradients", "[autograd][nn][model]") {
  nn::DecoderLM m = f64_model(nn_test::tiny_llama(2), "cpu");
  const Tensor ids = nn_test::ids_tensor({7, 8, 9, 10, 11, 12}, 1);
  auto grads = [&](bool recompute) {
    m.zero_grad();
    m.recompute_blocks(recompute);
    autograd::Tape tape;
    m.watch(tape);
    tape.backward(total(mul(m.forward(ids), m.forward(ids))));
    std::vector<std::vector<double>> out;
    for (const auto& [name, g] : m.named_gradients()) out.push_back(g.to_vector<double>());
    return out;
  };
  const auto plain = grads(false), recomputed = grads(true);
  REQUIRE(plain.size() == recomputed.size());
  for (std::size_t i = 0; i < plain.size(); ++i) CHECK(plain[i] == recomputed[i]);
}

TEST_CASE("autograd model: a KV cache while a tape records is an error", "[autograd][nn][model]") {
  nn::DecoderLM m = nn_test::random_model(nn_test::tiny_llama(2), 3, "cpu");
  nn::KVCache cache = m.make_cache(1, 8);
  const Tensor ids = nn_test::ids_tensor({1, 2}, 1);
  autograd::Tape tape;
  m.watch(tape);
  CHECK_THROWS_WITH(m.forward(ids, &cache), ContainsText("DecoderLM::forward") &&
                                                ContainsText("KV cache while a tape records"));
  CHECK(cache.length() == 0);
  {
    autograd::NoGrad pause;  // decoding inside a training step: the inference path
    CHECK(m.forward(ids, &cache).size(2) == 64);
    CHECK(cache.length() == 2);
  }
}
