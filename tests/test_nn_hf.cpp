// Hugging Face weight mapping: save_hf then load_hf into a fresh model gives
// identical logits; the saved tensors sit where Hugging Face puts them
// (q/k/v and gate/up rows of the fused weights, Conv1D transposed); each bad
// checkpoint is an Error naming the tensor and the file, with the model
// untouched.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/hf_weights.hpp"
#include "test_nn_util.hpp"

using namespace strata;
using namespace strata::nn;
using nn_test::ids_tensor;
using nn_test::random_model;
using nn_test::rel_err;

namespace {

const std::vector<std::int64_t> kPrompt = {1, 5, 9, 2, 6, 5, 3, 5};

bool same(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace

TEST_CASE("nn save_hf / load_hf round trip gives identical logits", "[nn][nn_hf]") {
  ModelConfig tied = nn_test::tiny_llama();
  tied.tie_word_embeddings = true;
  for (const ModelConfig& cfg : {nn_test::tiny_llama(), tied, nn_test::tiny_gpt2()}) {
    INFO((cfg.arch == Arch::llama ? "llama" : "gpt2") << " tied " << cfg.tie_word_embeddings);
    DecoderLM m = random_model(cfg, 31);
    const TensorDict d = save_hf(m);
    DecoderLM fresh = load_hf(cfg, d, "round-trip");
    CHECK(same(fresh.forward(ids_tensor(kPrompt)), m.forward(ids_tensor(kPrompt))));
    CHECK(d.count("lm_head.weight") == (cfg.arch == Arch::llama && !cfg.tie_word_embeddings));
    // Every saved tensor is loaded back (nothing extra, nothing dropped).
    std::int64_t n = 0;
    for (const auto& [name, t] : d) n += t.numel();
    CHECK(n == m.num_parameters());
  }
}

TEST_CASE("nn save_hf puts each fused part where Hugging Face keeps it", "[nn][nn_hf]") {
  DecoderLM l = random_model(nn_test::tiny_llama(), 32);
  TensorDict d = save_hf(l);
  const Tensor& qkv = l.blocks[1].attn.qkv.weight;  // [(4 + 2 + 2) 8, 32]
  CHECK(same(d.at("model.layers.1.self_attn.q_proj.weight"), qkv.narrow(0, 0, 32)));
  CHECK(same(d.at("model.layers.1.self_attn.k_proj.weight"), qkv.narrow(0, 32, 16)));
  CHECK(same(d.at("model.layers.1.self_attn.v_proj.weight"), qkv.narrow(0, 48, 16)));
  const Tensor& gu = std::get<GatedMLP>(l.blocks[0].mlp).gate_up.weight;  // [2 48, 32]
  CHECK(same(d.at("model.layers.0.mlp.gate_proj.weight"), gu.narrow(0, 0, 48)));
  CHECK(same(d.at("model.layers.0.mlp.up_proj.weight"), gu.narrow(0, 48, 48)));
  CHECK(same(d.at("model.embed_tokens.weight"), l.wte.weight));

  DecoderLM g = random_model(nn_test::tiny_gpt2(), 33);
  TensorDict e = save_hf(g);
  CHECK(same(e.at("transformer.h.0.attn.c_attn.weight"),
             g.blocks[0].attn.qkv.weight.transpose(0, 1)));
  CHECK(e.at("transformer.h.0.mlp.c_fc.weight").shape() == Shape{32, 128});
  CHECK(same(e.at("transformer.wpe.weight"), g.wpe.weight));
}

TEST_CASE("nn load_hf: GPT-2 names without the prefix, buffers and a tied head", "[nn][nn_hf]") {
  const ModelConfig cfg = nn_test::tiny_gpt2();
  DecoderLM g = random_model(cfg, 34);
  const Tensor want = g.forward(ids_tensor(kPrompt));
  TensorDict bare;
  for (const auto& [name, t] : save_hf(g))
    bare[name.substr(std::string("transformer.").size())] = t;
  // transformers' causal-mask buffers and a stored copy of the tied head.
  bare["h.0.attn.bias"] = Tensor::full({1, 1, 64, 64}, 1.0, DType::boolean);
  bare["h.1.attn.masked_bias"] = Tensor::full({}, -1e4);
  bare["lm_head.weight"] = bare.at("wte.weight").clone();
  CHECK(same(load_hf(cfg, bare, "bare").forward(ids_tensor(kPrompt)), want));

  // A head that differs from the embedding cannot be tied.
  bare["lm_head.weight"] = add(bare.at("wte.weight"), 1.0);
  CORE_REQUIRE_ERROR(load_hf(cfg, bare, "bare.safetensors"), "'lm_head.weight'", "bare.safetensors",
                     "differs from 'wte.weight'");
}

TEST_CASE("nn load_hf: a bad checkpoint names the tensor and file and leaves the model alone",
          "[nn][nn_hf]") {
  const ModelConfig cfg = nn_test::tiny_llama();
  DecoderLM m = random_model(cfg, 35);
  const TensorDict good = save_hf(m);
  DecoderLM target = random_model(cfg, 36);
  const Tensor before = target.forward(ids_tensor(kPrompt));
  const std::string q = "model.layers.1.self_attn.q_proj.weight";

  TensorDict missing = good;
  missing.erase("model.norm.weight");
  CORE_REQUIRE_ERROR(load_hf_into(target, missing, "m.safetensors"), "missing tensor",
                     "'model.norm.weight'", "m.safetensors");

  TensorDict unexpected = good;
  unexpected["model.layers.9.mlp.up_proj.weight"] = Tensor::zeros({48, 32});
  CORE_REQUIRE_ERROR(load_hf_into(target, unexpected, "m.safetensors"), "unexpected tensor",
                     "'model.layers.9.mlp.up_proj.weight'", "m.safetensors");

  TensorDict shaped = good;
  shaped[q] = Tensor::zeros({32, 31});
  CORE_REQUIRE_ERROR(load_hf_into(target, shaped, "m.safetensors"), "'" + q + "'", "[32, 31]",
                     "[32, 32]", "m.safetensors");

  TensorDict typed = good;
  typed[q] = Tensor::zeros({32, 32}, DType::i64);
  CORE_REQUIRE_ERROR(load_hf_into(target, typed, "m.safetensors"), "'" + q + "'", "i64",
                     "m.safetensors");

  // Not one of the failed loads touched a parameter.
  CHECK(same(target.forward(ids_tensor(kPrompt)), before));
  // The good checkpoint then loads.
  load_hf_into(target, good, "m.safetensors");
  CHECK(same(target.forward(ids_tensor(kPrompt)), m.forward(ids_tensor(kPrompt))));
}

TEST_CASE("nn load_hf converts bf16 and f16 checkpoints to the model's dtype", "[nn][nn_hf]") {
  const ModelConfig cfg = nn_test::tiny_llama();
  DecoderLM m = random_model(cfg, 37);
  for (DType stored : {DType::bf16, DType::f16}) {
    INFO(dtype_name(stored));
    TensorDict d = save_hf(m);
    for (auto& [name, t] : d) t = cast(t, stored);
    DecoderLM f32 = load_hf(cfg, d, "half");
    CHECK(f32.dtype() == DType::f32);
    CHECK(f32.wte.weight.dtype() == DType::f32);
    // The weights are the stored values exactly (widening is exact).
    CHECK(same(f32.wte.weight, cast(cast(m.wte.weight, stored), DType::f32)));
    DecoderLM half = load_hf(cfg, d, "half", stored);
    CHECK(half.blocks[0].attn.qkv.weight.dtype() == stored);
    CHECK(rel_err(half.forward(ids_tensor(kPrompt)), m.forward(ids_tensor(kPrompt))) < 0.06);
  }
}

TEST_CASE("nn save_model / load_model through config.json and safetensors", "[nn][nn_hf]") {
  const auto dir = std::filesystem::temp_directory_path() / "strata_test_nn_hf";
  std::filesystem::create_directories(dir);
  for (const ModelConfig& cfg : {nn_test::tiny_llama(), nn_test::tiny_gpt2()}) {
    DecoderLM m = random_model(cfg, 38);
    const std::string c = (dir / "config.json").string(), w = (dir / "model.safetensors").string();
    save_model(m, c, w);
    DecoderLM back = load_model(c, w);
    CHECK(same(back.forward(ids_tensor(kPrompt)), m.forward(ids_tensor(kPrompt))));
  }
  std::filesystem::remove_all(dir);
}
