// Generation: the byte tokenizer, the sampler on hand-made distributions
// (greedy, top-k, top-p, temperature, seeds, draw frequencies) and the
// prefill-then-decode loop against greedy decoding by full forwards.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/nn/generate.hpp"
#include "test_nn_util.hpp"

using namespace strata;
using namespace strata::nn;

namespace {

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

std::vector<std::int64_t> ids_of(const std::vector<std::pair<std::int64_t, double>>& c) {
  std::vector<std::int64_t> ids;
  for (const auto& e : c) ids.push_back(e.first);
  return ids;
}

}  // namespace

TEST_CASE("nn ByteTokenizer: UTF-8 bytes in, the same text out", "[nn][nn_generate]") {
  const std::string text = "h\xc3\xa9llo, \xe2\x82\xac!";  // "héllo, €!"
  const auto ids = ByteTokenizer::encode(text);
  CHECK(ids.size() == text.size());
  CHECK(ids[1] == 0xc3);
  CHECK(ByteTokenizer::decode(ids) == text);
  CORE_REQUIRE_ERROR(ByteTokenizer::decode(std::int64_t{256}), "256");
}

TEST_CASE("nn Sampler: greedy, top-k, top-p, temperature and seeds", "[nn][nn_generate]") {
  // A hand-made distribution, its most likely token at index 2.
  const std::vector<double> p = {0.15, 0.2, 0.5, 0.1, 0.05};
  const auto logits = log_probs(p);

  SECTION("greedy picks the first argmax; top-k 1 is greedy at any temperature") {
    Sampler greedy;
    CHECK(greedy.sample(logits) == 2);
    CHECK(greedy.sample({1.f, 3.f, 3.f, 0.f}) == 1);
    SamplingOptions k1;
    k1.temperature = 5.0;
    k1.top_k = 1;
    k1.seed = 3;
    Sampler s(k1);
    for (int i = 0; i < 50; ++i) CHECK(s.sample(logits) == 2);
  }
  SECTION("top-p keeps the smallest set whose mass reaches p, renormalised") {
    SamplingOptions o;
    o.temperature = 1.0;
    o.top_p = 0.6;  // 0.5 < 0.6 <= 0.5 + 0.2
    auto c = Sampler(o).candidates(logits);
    CHECK(ids_of(c) == std::vector<std::int64_t>{2, 1});
    CHECK(c[0].second == Approx(0.5 / 0.7).epsilon(1e-6));
    o.top_p = 0.8;  // 0.7 < 0.8 <= 0.85
    CHECK(ids_of(Sampler(o).candidates(logits)) == std::vector<std::int64_t>{2, 1, 0});
    o.top_p = 0.45;
    CHECK(ids_of(Sampler(o).candidates(logits)) == std::vector<std::int64_t>{2});
    o.top_p = 1.0;
    CHECK(Sampler(o).candidates(logits).size() == 5);
    o.top_k = 3;  // then top-k trims first
    c = Sampler(o).candidates(logits);
    CHECK(ids_of(c) == std::vector<std::int64_t>{2, 1, 0});
    CHECK(c[2].second == Approx(0.15 / 0.85).epsilon(1e-6));
  }
  SECTION("temperature 1 reproduces the distribution; the same seed the same draws") {
    SamplingOptions o;
    o.temperature = 1.0;
    o.seed = 42;
    Sampler a(o), b(o);
    std::vector<int> count(5, 0);
    std::vector<std::int64_t> da, db;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      da.push_back(a.sample(logits));
      db.push_back(b.sample(logits));
      ++count[static_cast<std::size_t>(da.back())];
    }
    CHECK(da == db);
    for (std::size_t i = 0; i < p.size(); ++i) {
      INFO("token " << i);
      CHECK(std::abs(count[i] / double(n) - p[i]) < 0.015);  // ~4 sigma at n = 20000
    }
    o.seed = 43;
    Sampler c(o);
    std::vector<std::int64_t> dc;
    for (int i = 0; i < 100; ++i) dc.push_back(c.sample(logits));
    CHECK(dc != std::vector<std::int64_t>(da.begin(), da.begin() + 100));
  }
  SECTION("temperature toward 0 approaches greedy") {
    double prev = 0;
    for (double t : {2.0, 1.0, 0.5, 0.1, 0.01}) {
      SamplingOptions o;
      o.temperature = t;
      const auto c = Sampler(o).candidates(logits);
      CHECK(c.front().first == 2);
      CHECK(c.front().second > prev);
      prev = c.front().second;
    }
    CHECK(prev > 1 - 1e-12);
  }
  SECTION("bad options") {
    SamplingOptions o;
    o.top_p = 0;
    CORE_REQUIRE_ERROR(Sampler{o}, "top_p");
    o.top_p = 1;
    o.top_k = -1;
    CORE_REQUIRE_ERROR(Sampler{o}, "top_k");
  }
}

TEST_CASE("nn generate: greedy equals argmax over full forwards, on every backend",
          "[nn][nn_generate]") {
  for (const ModelConfig& cfg : {nn_test::tiny_llama(), nn_test::tiny_gpt2()}) {
    for (const char* be : nn_test::kBackends) {
      INFO((cfg.arch == Arch::llama ? "llama" : "gpt2") << " " << be);
      DecoderLM m = nn_test::random_model(cfg, 51, be);
      const std::vector<std::int64_t> prompt = {4, 8, 15, 16, 23, 42};
      std::vector<std::int64_t> seen;
      const GenerationResult r = generate(m, prompt, 10, {}, [&](std::int64_t t) {
        seen.push_back(t);
        return true;
      });
      CHECK(r.tokens.size() == 10);
      CHECK(seen == r.tokens);
      CHECK(r.prompt_tokens == 6);
      // Independent: a full forward over the growing sequence each step.
      std::vector<std::int64_t> seq = prompt;
      for (std::int64_t want : r.tokens) {
        const Tensor l = m.forward(nn_test::ids_tensor(seq));
        const auto last = l.select(1, l.size(1) - 1).reshape({cfg.vocab_size}).to_vector<float>();
        CHECK(Sampler().sample(last) == want);
        seq.push_back(want);
      }
      // The callback stops it.
      const auto stopped = generate(m, prompt, 10, {}, [](std::int64_t) { return false; });
      CHECK(stopped.tokens.size() == 1);
      // Seeded sampling repeats itself.
      SamplingOptions s;
      s.temperature = 1.0;
      s.top_k = 20;
      s.top_p = 0.9;
      s.seed = 7;
      CHECK(generate(m, prompt, 12, s).tokens == generate(m, prompt, 12, s).tokens);
    }
  }
}
