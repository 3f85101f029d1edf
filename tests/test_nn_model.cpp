// DecoderLM (Llama and GPT-2 styles): the KV cache against full prefills,
// grouped-query heads against explicitly repeated heads, backends against
// each other, bf16 against f32, batches against single sequences, and the
// errors a caller can cause (nothing written when they fire).
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/concat.hpp"
#include "strata/elementwise.hpp"
#include "test_nn_util.hpp"

using namespace strata;
using namespace strata::nn;
using nn_test::ids_tensor;
using nn_test::kBackends;
using nn_test::random_model;
using nn_test::rel_err;

namespace {

const std::vector<std::int64_t> kPrompt = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3};

std::vector<ModelConfig> both_styles() { return {nn_test::tiny_llama(), nn_test::tiny_gpt2()}; }

const char* style(const ModelConfig& c) { return c.arch == Arch::llama ? "llama" : "gpt2"; }

}  // namespace

TEST_CASE("nn DecoderLM: a prefill equals one decode step per token", "[nn][nn_model]") {
  for (const ModelConfig& cfg : both_styles()) {
    for (const char* be : kBackends) {
      INFO(style(cfg) << " " << be);
      DecoderLM m = random_model(cfg, 7, be);
      const auto T = static_cast<std::int64_t>(kPrompt.size());
      const Tensor full = m.forward(ids_tensor(kPrompt));
      REQUIRE(full.shape() == Shape{1, T, cfg.vocab_size});

      KVCache c = m.make_cache(1, 32);
      const Tensor prefill = m.forward(ids_tensor(kPrompt), &c);
      CHECK(c.length() == T);
      CHECK(rel_err(prefill, full) < 1e-6);

      KVCache d = m.make_cache(1, 32);
      for (std::int64_t t = 0; t < T; ++t) {
        const Tensor step = m.forward(ids_tensor({kPrompt[static_cast<std::size_t>(t)]}), &d);
        INFO("step " << t);
        CHECK(rel_err(step, full.narrow(1, t, 1)) < 2e-5);
      }
      CHECK(d.length() == T);

      // Two chunks (5 + 7) equal one.
      KVCache e = m.make_cache(1, 32);
      const Tensor a = m.forward(ids_tensor({kPrompt.begin(), kPrompt.begin() + 5}), &e);
      const Tensor b = m.forward(ids_tensor({kPrompt.begin() + 5, kPrompt.end()}), &e);
      CHECK(rel_err(a, full.narrow(1, 0, 5)) < 2e-5);
      CHECK(rel_err(b, full.narrow(1, 5, T - 5)) < 2e-5);

      // truncate() forgets the tail: the last 7 again give the same logits.
      e.truncate(5);
      CHECK(rel_err(m.forward(ids_tensor({kPrompt.begin() + 5, kPrompt.end()}), &e),
                    full.narrow(1, 5, T - 5)) < 2e-5);
      CORE_REQUIRE_ERROR(e.truncate(13), "length 13");
      // reset() starts a new sequence in the same buffers.
      e.reset();
      CHECK(rel_err(m.forward(ids_tensor(kPrompt), &e), full) < 1e-6);
    }
  }
}

TEST_CASE("nn DecoderLM: running past the cache is an error that writes nothing",
          "[nn][nn_model]") {
  DecoderLM m = random_model(nn_test::tiny_llama(), 8);
  KVCache c = m.make_cache(1, 10);
  m.forward(ids_tensor({1, 2, 3, 4, 5, 6, 7, 8}), &c);
  const Tensor k_before = c.layer(0).k.clone(), v_before = c.layer(1).v.clone();
  Tensor logits = Tensor::full({1, 3, 64}, 7.25);
  CORE_REQUIRE_ERROR(m.forward_out(logits, ids_tensor({1, 2, 3}), &c), "KV cache holds 8 of 10",
                     "3 more do not fit");
  CHECK(c.length() == 8);
  CHECK(rel_err(c.layer(0).k, k_before) == 0.0);
  CHECK(rel_err(c.layer(1).v, v_before) == 0.0);
  CHECK(rel_err(logits, Tensor::full({1, 3, 64}, 7.25)) == 0.0);
  // Two more still fit, then one more does not.
  m.forward(ids_tensor({1, 2}), &c);
  CHECK(c.length() == 10);
  CORE_REQUIRE_ERROR(m.forward(ids_tensor({1}), &c), "10 of 10");

  // Out-of-range ids, a wrong batch, a wrong rank.
  KVCache d = m.make_cache(1, 10);
  CORE_REQUIRE_ERROR(m.forward(ids_tensor({1, 64}), &d), "64");
  CHECK(d.length() == 0);
  CORE_REQUIRE_ERROR(m.forward(ids_tensor({1, 2, 3, 4}, 2), &d), "batch 2");
  CORE_REQUIRE_ERROR(m.forward(Tensor::zeros({4}, DType::i64)), "[batch, T]");
  CORE_REQUIRE_ERROR(m.forward(Tensor::zeros({1, 4}, DType::f32)), "i32 or i64");

  // GPT-2's learned positions end at max_position_embeddings.
  DecoderLM g = random_model(nn_test::tiny_gpt2(), 9);
  CORE_REQUIRE_ERROR(g.forward(Tensor::zeros({1, 65}, DType::i64)), "max_position_embeddings 64");
}

TEST_CASE("nn DecoderLM: grouped-query heads equal the K/V heads repeated", "[nn][nn_model]") {
  const ModelConfig gqa_cfg = nn_test::tiny_llama(2), mha_cfg = nn_test::tiny_llama(4);
  DecoderLM gqa = random_model(gqa_cfg, 10);
  DecoderLM mha(mha_cfg);
  auto src = gqa.named_parameters();
  auto dst = mha.named_parameters();
  REQUIRE(src.size() == dst.size());
  const std::int64_t hd = 8, H = 4, G = 2;
  for (std::size_t i = 0; i < src.size(); ++i) {
    REQUIRE(src[i].first == dst[i].first);
    if (src[i].first.find("attn.qkv.weight") == std::string::npos) {
      copy_(*dst[i].second, *src[i].second);
      continue;
    }
    // Query head h reads KV head h / (H / G): repeat each KV head's rows.
    const Tensor& w = *src[i].second;
    std::vector<Tensor> rows = {w.narrow(0, 0, H * hd)};
    for (std::int64_t part = 0; part < 2; ++part)
      for (std::int64_t h = 0; h < H; ++h)
        rows.push_back(w.narrow(0, H * hd + part * G * hd + (h / (H / G)) * hd, hd));
    copy_(*dst[i].second, concat(rows, 0));
  }
  for (const char* be : kBackends) {
    INFO(be);
    gqa.options().backend = be;
    mha.options().backend = be;
    CHECK(rel_err(gqa.forward(ids_tensor(kPrompt)), mha.forward(ids_tensor(kPrompt))) < 1e-5);
  }
}

TEST_CASE("nn DecoderLM: the reference and cpu backends agree; bf16 and f16 within their tolerance",
          "[nn][nn_model]") {
  for (const ModelConfig& cfg : both_styles()) {
    INFO(style(cfg));
    DecoderLM ref = random_model(cfg, 11, "reference");
    DecoderLM cpu = random_model(cfg, 11, "cpu");
    const Tensor want = ref.forward(ids_tensor(kPrompt));
    CHECK(rel_err(cpu.forward(ids_tensor(kPrompt)), want) < 1e-5);

    // bf16 keeps 8 significant bits; rounding the weights and every
    // activation over 2 layers moves the logits by about 1% of their largest
    // (measured 0.9-1.1%); f16's 11 bits by about 0.2%. Bounds: 3 times those.
    for (const char* be : kBackends) {
      INFO(be);
      DecoderLM half = random_model(cfg, 11, be);
      half.to(DType::bf16);
      CHECK(half.dtype() == DType::bf16);
      const Tensor got = half.forward(ids_tensor(kPrompt));
      CHECK(got.dtype() == DType::f32);
      const double err = rel_err(got, want);
      CHECK(err < 0.03);
      CHECK(err > 0.0);  // it really ran in bf16
      // The cache follows the model's dtype; a decode step matches bf16 prefill.
      KVCache c = half.make_cache(1, 16);
      CHECK(c.dtype() == DType::bf16);
      half.forward(ids_tensor({kPrompt.begin(), kPrompt.end() - 1}), &c);
      const Tensor last = half.forward(ids_tensor({kPrompt.back()}), &c);
      CHECK(rel_err(last, got.narrow(1, 11, 1)) < 0.03);

      DecoderLM f16 = random_model(cfg, 11, be);
      f16.to(DType::f16);
      const double err16 = rel_err(f16.forward(ids_tensor(kPrompt)), want);
      CHECK(err16 < 0.006);
      CHECK(err16 > 0.0);
    }
  }
}

TEST_CASE("nn DecoderLM: a batch equals its sequences run alone", "[nn][nn_model]") {
  for (const ModelConfig& cfg : both_styles()) {
    INFO(style(cfg));
    DecoderLM m = random_model(cfg, 12, "cpu");
    const std::vector<std::int64_t> a = {1, 2, 3, 4, 5}, b = {9, 8, 7, 6, 5};
    std::vector<std::int64_t> ab = a;
    ab.insert(ab.end(), b.begin(), b.end());
    KVCache c = m.make_cache(2, 8);
    const Tensor both = m.forward(ids_tensor(ab, 2), &c);
    const Tensor step = m.forward(ids_tensor({11, 12}, 2), &c);
    CHECK(rel_err(both.narrow(0, 0, 1), m.forward(ids_tensor(a))) < 1e-5);
    CHECK(rel_err(both.narrow(0, 1, 1), m.forward(ids_tensor(b))) < 1e-5);
    std::vector<std::int64_t> b6 = b;
    b6.push_back(12);
    CHECK(rel_err(step.narrow(0, 1, 1), m.forward(ids_tensor(b6)).narrow(1, 5, 1)) < 1e-5);
  }
}

TEST_CASE("nn DecoderLM: parameter names and counts", "[nn][nn_model]") {
  const ModelConfig l = nn_test::tiny_llama();
  DecoderLM m(l);
  const std::int64_t D = 32, F = 48, V = 64, qkv = (4 + 2 * 2) * 8;
  const std::int64_t per_layer = D + qkv * D + D * 32 + D + 2 * F * D + D * F;
  CHECK(m.num_parameters() == V * D + 2 * per_layer + D + V * D);
  auto names = m.named_parameters();
  CHECK(names.front().first == "wte.weight");
  CHECK(names[1].first == "blocks.0.norm1.weight");
  CHECK(names[2].first == "blocks.0.attn.qkv.weight");
  CHECK(names[5].first == "blocks.0.mlp.gate_up.weight");
  CHECK(names.back().first == "lm_head.weight");

  const ModelConfig g = nn_test::tiny_gpt2();
  DecoderLM n(g);
  const std::int64_t gl =
      2 * D + (3 * D * D + 3 * D) + (D * D + D) + 2 * D + (D * 128 + 128) + (128 * D + D);
  CHECK(n.num_parameters() == V * D + 64 * D + 2 * gl + 2 * D);  // tied: no lm_head
  CHECK(n.named_parameters().back().first == "norm_f.bias");
  CHECK(&n.lm_head_weight() == &n.wte.weight);
}

// The form a recorded CUDA graph step takes (DecoderLM's decode on cuda):
// k and v written at device positions by index_copy_, attention over the
// whole cache with a mask of filled positions. Run here on the host
// backends against the eager form, so the method is checked where CI runs.
TEST_CASE("nn MultiHeadAttention: a step at device positions equals an eager step",
          "[nn][nn_model]") {
  for (const char* be : kBackends) {
    INFO(be);
    RotaryOptions ro;
    MultiHeadAttention mha(32, 4, 2, 8, false, ro);
    init_normal(mha, 5, 0.2);
    MatmulOptions opt;
    opt.backend = be;
    const std::int64_t T = 6, max_len = 16;
    const Tensor x = Tensor::randn({1, T + 1, 32}, 9);
    KVCache eager(1, 1, 2, 8, max_len, DType::f32, Device::cpu());
    KVCache graphed(1, 1, 2, 8, max_len, DType::f32, Device::cpu());
    const Tensor pos = Tensor::arange(T + 1, DType::i64);
    // The same prefill into both caches.
    mha.forward(x.narrow(1, 0, T), pos.narrow(0, 0, T), &eager.layer(0), 0, opt);
    mha.forward(x.narrow(1, 0, T), pos.narrow(0, 0, T), &graphed.layer(0), 0, opt);
    const Tensor xs = x.narrow(1, T, 1);
    const Tensor want = mha.forward(xs, pos.narrow(0, T, 1), &eager.layer(0), T, opt);

    Tensor valid = Tensor::zeros({max_len}, DType::boolean);
    fill_(valid.narrow(0, 0, T + 1), 1.0);
    const AttentionScratch s{Tensor::empty({1, 1, 64}), Tensor::empty({1, 1, 32})};
    const Tensor got = Tensor::empty({1, 1, 32});
    mha.forward_out(got, xs, pos.narrow(0, T, 1), CacheSlot{&graphed.layer(0), -1, valid}, s, opt);
    CHECK(rel_err(got, want) < 1e-5);
    // The appended k and v landed at position T, as the eager copy_ put them.
    CHECK(rel_err(graphed.layer(0).kv.narrow(3, 0, T + 1), eager.layer(0).kv.narrow(3, 0, T + 1)) ==
          0.0);

    // Bad masks are errors naming the argument, before the cache is touched.
    const Tensor before = graphed.layer(0).kv.clone();
    CORE_REQUIRE_ERROR(
        mha.forward_out(got, xs, pos.narrow(0, T, 1),
                        CacheSlot{&graphed.layer(0), -1, valid.narrow(0, 0, 8)}, s, opt),
        "valid must be bool [16]");
    CORE_REQUIRE_ERROR(
        mha.forward_out(got, xs, pos.narrow(0, T, 1),
                        CacheSlot{&graphed.layer(0), -1, Tensor::zeros({max_len})}, s, opt),
        "valid must be bool");
    CHECK(rel_err(graphed.layer(0).kv, before) == 0.0);
  }
}
