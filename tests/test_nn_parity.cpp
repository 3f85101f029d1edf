// Parity with PyTorch: the fixtures in tests/data/parity/ were written by
// bench/peer_model.py (the models in plain PyTorch with Hugging Face names,
// checked there against transformers' own classes). Each holds a prompt,
// PyTorch's f32 logits for it, and PyTorch's 64-token greedy continuation.
// docs/guide/models.md describes the method.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "attention_test_util.hpp"
#include "catch.hpp"
#include "strata/nn/hf_weights.hpp"
#include "strata/nn/safetensors.hpp"

using namespace strata;

namespace {

struct Fixture {
  std::string name, config, weights, expected;
};

std::vector<Fixture> fixtures() {
  const std::string root = STRATA_SOURCE_DIR;
  const std::string p = root + "/tests/data/parity/";
  return {
      {"llama (random)", p + "llama/config.json", p + "llama/model.safetensors",
       p + "llama/expected.safetensors"},
      {"gpt2 (random)", p + "gpt2/config.json", p + "gpt2/model.safetensors",
       p + "gpt2/expected.safetensors"},
      {"tiny-llama (shipped, bf16 weights)", root + "/models/tiny-llama/config.json",
       root + "/models/tiny-llama/model.safetensors", p + "tiny/expected.safetensors"},
  };
}

std::int64_t argmax_last(const Tensor& logits) {  // logits [1, T, V] -> argmax of row T - 1
  const Tensor last = logits.select(1, logits.size(1) - 1).select(0, 0);
  const std::vector<float> v = last.to_vector<float>();
  return std::max_element(v.begin(), v.end()) - v.begin();
}

}  // namespace

TEST_CASE("nn parity: logits and greedy continuations equal PyTorch's on every backend",
          "[nn][parity]") {
  for (const Fixture& f : fixtures()) {
    const nn::SafetensorsFile want = nn::load_safetensors(f.expected);
    const Tensor prompt = want.tensors.at("prompt");       // [1, T] i64
    const Tensor logits_want = want.tensors.at("logits");  // [1, T, V] f32
    const std::vector<std::int64_t> greedy_want =
        want.tensors.at("greedy").to_vector<std::int64_t>();
    for (const auto& be : test::runnable_backends()) {
      INFO(f.name << " on " << be.name);
      nn::DecoderLM model = nn::load_model(f.config, f.weights, DType::f32, be.device);
      model.options().backend = be.name;

      // Logits of the whole prompt in one call, within 1e-4 of the largest logit.
      const Tensor logits = model.forward(prompt.to(be.device)).to(Device::cpu());
      REQUIRE(logits.shape() == logits_want.shape());
      const auto got = logits.to_vector<double>(), ref = logits_want.to_vector<double>();
      double err = 0, scale = 0;
      for (std::size_t i = 0; i < ref.size(); ++i) {
        err = std::max(err, std::abs(got[i] - ref[i]));
        scale = std::max(scale, std::abs(ref[i]));
      }
      CAPTURE(err, scale);
      CHECK(err <= 1e-4 * scale);

      // Greedy: prefill with the cache, then one token per step.
      nn::KVCache cache = model.make_cache(1, prompt.size(1) + 64);
      Tensor step_logits = model.forward(prompt.to(be.device), &cache);
      std::vector<std::int64_t> greedy;
      for (int s = 0; s < 64; ++s) {
        const std::int64_t tok = argmax_last(step_logits.to(Device::cpu()));
        greedy.push_back(tok);
        if (s + 1 < 64)
          step_logits = model.forward(
              Tensor::from_vector(std::vector<std::int64_t>{tok}, {1, 1}, be.device), &cache);
      }
      CHECK(greedy == greedy_want);
    }
  }
}
