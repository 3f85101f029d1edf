// DecoderLM::loss, the chunked fused loss (nn/src/decoder_loss.cpp), against
// the unfused path a user would write: forward -> logits -> cross_entropy
// under the tape. The loss and every parameter's gradient agree in f64 and
// f32 on the reference and cpu backends, for one row per chunk, a chunk size
// that does not divide the rows, one chunk holding every row and the
// automatic size; with ignored rows (ignore_index outside and inside the
// vocabulary); on an untied Llama head (RMSNorm), a tied Llama head and
// GPT-2's tied head (LayerNorm with bias), where the head's gradient must
// land in the one embedding table. And the point of it: under an
// address-space limit far below the [rows, V] logits, the fused loss trains
// while the unfused path runs out of memory.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "address_limit.hpp"
#include "catch.hpp"
#include "strata/autograd.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "test_nn_util.hpp"

using namespace strata;

namespace {

struct Result {
  double loss = 0;
  std::vector<std::pair<std::string, Tensor>> grads;  // copies, by parameter name
};

// One training step's loss and gradients: fused through DecoderLM::loss
// when `lo` is given, else the unfused cross_entropy of forward's logits.
Result step(nn::DecoderLM& m, const Tensor& ids, const Tensor& targets, std::int64_t ignore,
            const nn::LossOptions* lo) {
  m.zero_grad();
  Result r;
  {
    autograd::Tape tape;
    m.watch(tape);
    Tensor loss;
    if (lo != nullptr) {
      loss = m.loss(ids, targets, *lo);
    } else {
      CrossEntropyOptions ce;
      ce.ignore_index = ignore;
      loss = cross_entropy(m.forward(ids), targets, ce);
    }
    REQUIRE(loss.dim() == 0);
    tape.backward(loss);
    r.loss = loss.item({});
  }
  for (const auto& [name, g] : m.named_gradients()) r.grads.emplace_back(name, g.clone());
  return r;
}

double max_abs(const Tensor& t) {
  double v = 0;
  for (double x : t.to_vector<double>()) v = std::max(v, std::abs(x));
  return v;
}

// Targets in [0, V) from a fixed pattern, with `ignore` at a few rows.
Tensor make_targets(std::int64_t b, std::int64_t t, std::int64_t vocab, std::int64_t ignore) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < b * t; ++i) v.push_back((i * 37 + 11) % vocab);
  v[1] = ignore;
  v[static_cast<std::size_t>(b * t - 2)] = ignore;
  return Tensor::from_vector(v, {b, t});
}

nn::ModelConfig tied_llama() {
  nn::ModelConfig c = nn_test::tiny_llama(2);
  c.tie_word_embeddings = true;
  return c;
}

void compare(const Result& fused, const Result& ref, double tol) {
  CHECK(std::abs(fused.loss - ref.loss) <= tol * std::abs(ref.loss));
  REQUIRE(fused.grads.size() == ref.grads.size());
  for (std::size_t i = 0; i < ref.grads.size(); ++i) {
    const auto& [name, g] = ref.grads[i];
    INFO(name);
    REQUIRE(fused.grads[i].first == name);
    CHECK(max_abs(g) > 0);  // every parameter takes part
    CHECK(nn_test::rel_err(fused.grads[i].second, g) <= tol);
  }
}

}  // namespace

TEST_CASE("lm loss: the fused chunked loss and its gradients equal the unfused path",
          "[nn][lmloss][autograd]") {
  const std::pair<const char*, nn::ModelConfig> configs[] = {
      {"llama untied", nn_test::tiny_llama(2)},
      {"llama tied", tied_llama()},
      {"gpt2 tied", nn_test::tiny_gpt2()}};
  const std::int64_t b = 2, t = 5;  // 10 rows
  for (const auto& [label, c] : configs) {
    for (const DType dt : {DType::f64, DType::f32}) {
      for (const char* backend : nn_test::kBackends) {
        nn::DecoderLM m(c, dt);
        nn::init_normal(m, 41, 0.3);
        m.options().backend = backend;
        const Tensor ids =
            Tensor::from_vector<std::int64_t>({3, 17, 42, 5, 9, 60, 1, 33, 8, 21}, {b, t});
        for (const std::int64_t ignore : {std::int64_t(-100), std::int64_t(7)}) {
          const Tensor targets = make_targets(b, t, c.vocab_size, ignore);
          const Result ref = step(m, ids, targets, ignore, nullptr);
          for (const std::int64_t chunk : {1, 3, 10, 64, 0}) {
            INFO(label << " " << dtype_name(dt) << " on " << backend << ", ignore_index " << ignore
                       << ", chunk_rows " << chunk);
            nn::LossOptions lo;
            lo.ignore_index = ignore;
            lo.chunk_rows = chunk;
            compare(step(m, ids, targets, ignore, &lo), ref, dt == DType::f64 ? 1e-12 : 2e-6);
          }
        }
      }
    }
  }
}

TEST_CASE("lm loss: recomputed blocks and an ids tensor of i32 give the same gradients",
          "[nn][lmloss][autograd]") {
  nn::DecoderLM m(nn_test::tiny_gpt2(), DType::f64);
  nn::init_normal(m, 43, 0.3);
  m.options().backend = "cpu";
  const Tensor ids = Tensor::from_vector<std::int64_t>({4, 8, 15, 16, 23, 42, 7, 0}, {2, 4});
  const Tensor targets = make_targets(2, 4, 64, -100);
  nn::LossOptions lo;
  lo.chunk_rows = 3;
  const Result plain = step(m, ids, targets, -100, &lo);
  m.recompute_blocks(true);
  compare(step(m, ids, targets, -100, &lo), plain, 1e-13);
  m.recompute_blocks(false);
  compare(step(m, ids.to(DType::i32), targets.to(DType::i32), -100, &lo), plain, 1e-13);
}

TEST_CASE("lm loss: without a tape it is the mean cross entropy of the inference logits",
          "[nn][lmloss]") {
  for (const char* backend : nn_test::kBackends) {
    INFO(backend);
    nn::DecoderLM m = nn_test::random_model(nn_test::tiny_llama(2), 45, backend);
    const Tensor ids = Tensor::from_vector<std::int64_t>({3, 1, 4, 1, 5, 9, 2, 6, 5}, {3, 3});
    const Tensor targets = make_targets(3, 3, 64, -100);
    const double want = cross_entropy(m.forward(ids), targets).item({});
    nn::LossOptions lo;
    lo.chunk_rows = 2;
    const Tensor got = m.loss(ids, targets, lo);
    CHECK(got.dtype() == DType::f32);
    CHECK(std::abs(got.item({}) - want) <= 1e-6 * std::abs(want));
    // Every row ignored: 0 / 0, as cross_entropy's mean and PyTorch give.
    const Tensor none = Tensor::full({3, 3}, -100.0, DType::i64);
    CHECK(std::isnan(m.loss(ids, none, lo).item({})));
  }
}

TEST_CASE("lm loss: bad targets and options are errors naming the call", "[nn][lmloss]") {
  nn::DecoderLM m = nn_test::random_model(nn_test::tiny_llama(2), 47);
  const Tensor ids = Tensor::from_vector<std::int64_t>({1, 2, 3, 4}, {1, 4});
  auto error_of = [&](const Tensor& targets, std::int64_t chunk) -> std::string {
    nn::LossOptions lo;
    lo.chunk_rows = chunk;
    try {
      (void)m.loss(ids, targets, lo);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  const Tensor good = Tensor::from_vector<std::int64_t>({2, 3, 4, 5}, {1, 4});
  CHECK(error_of(good, 0).empty());
  CHECK(error_of(Tensor::from_vector<std::int64_t>({2, 3, 4}, {1, 3}), 0)
            .find("DecoderLM::loss: targets has shape [1, 3] but must be ids' [1, 4]") !=
        std::string::npos);
  CHECK(error_of(good.to(DType::f32), 0).find("targets must be i32 or i64, got f32") !=
        std::string::npos);
  CHECK(error_of(good, -1).find("chunk_rows must be >= 0 (0: automatic), got -1") !=
        std::string::npos);
  // A target outside the vocabulary: cross_entropy names it.
  const std::string e = error_of(Tensor::from_vector<std::int64_t>({2, 3, 64, 5}, {1, 4}), 2);
  INFO(e);
  CHECK(e.find("64") != std::string::npos);
}

// The allocator keeps no statistic of live bytes, so the memory property is
// shown by a limit: the process may map only 64 MiB more than it does, the
// unfused logits of 2048 rows x 16384 classes are 128 MiB (and their
// gradient as much again), while the fused loss holds 64 rows of them.
TEST_CASE("lm loss: the whole batch's logits are never held at once", "[nn][lmloss][memory]") {
#ifdef STRATA_TEST_NO_RLIMIT
  WARN("skipped under a sanitizer (RLIMIT_AS cannot be lowered meaningfully)");
#else
  const std::int64_t rows = 2048, d = 16, vocab = 16384;
  const nn::Norm norm = nn::RMSNorm(d, 1e-6);
  const Tensor x = Tensor::randn({rows, d}, 51);
  const Tensor w = mul(Tensor::randn({vocab, d}, 52), 0.1);
  std::vector<std::int64_t> t;
  for (std::int64_t i = 0; i < rows; ++i) t.push_back((i * 7919) % vocab);
  const Tensor targets = Tensor::from_vector(t, {rows});
  const Tensor gx = Tensor::zeros({rows, d}), gw = Tensor::zeros({vocab, d});
  MatmulOptions o;
  o.backend = "cpu";
  nn::LossOptions lo;
  lo.chunk_rows = 64;
  auto train = [&](bool fused) {
    autograd::Tape tape;
    tape.watch(x, gx);
    tape.watch(w, gw);
    const Tensor loss =
        fused ? nn::lm_loss(x, norm, w, targets, lo, o)
              : cross_entropy(linear(std::get<nn::RMSNorm>(norm).forward(x, o), w, Tensor(), o),
                              targets, {}, o);
    tape.backward(loss);
    return loss.item({});
  };
  const double want = train(true);  // outside the limit: threads and their arenas exist
  const double got = test::with_address_limit(64, [&] { return train(true); });
  CHECK(std::abs(got - want) <= 1e-6 * std::abs(want));
  CHECK_THROWS(test::with_address_limit(64, [&] { return train(false); }));
#endif
}
