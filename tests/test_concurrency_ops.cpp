// Any number of threads may run ops and models at once, each on its own
// tensors and its own model (a DecoderLM keeps per-call workspaces and is
// not shared between threads; docs/guide/architecture.md, "What may run at once"). Eight
// std::threads run the ops of a transformer block, and a model's forward and greedy generation,
// several rounds at once on the cpu and reference backends; every result
// must be bit-identical to the same call made serially. scripts/tsan.sh
// runs this under ThreadSanitizer with the attention cases.
#include <string>
#include <vector>

#include "catch.hpp"
#include "concurrency_util.hpp"
#include "strata/nn/generate.hpp"
#include "strata/nn/hf_weights.hpp"
#include "strata/strata.hpp"

using namespace strata;

namespace {

// The ops of one transformer block on views, one problem per thread (its
// own sizes and seed), each result kept: embedding, rms_norm, linear into a
// fused qkv, rotary on q and k views, index_copy_ into a cache, matmul with
// a transposed view, softmax, layer_norm, gelu, silu_mul, a broadcast add,
// concat, sum, argmax and a bf16 round trip.
std::vector<Tensor> block(int i, const std::string& backend) {
  OpOptions o;
  o.backend = backend;
  MatmulOptions mo;
  mo.backend = backend;
  const std::int64_t T = 5 + i, D = 16 + 8 * (i % 3), V = 40, H = 2, hd = D / H;
  const auto seed = static_cast<std::uint64_t>(500 + 11 * i);
  const DType dt = i % 4 == 3 ? DType::f64 : DType::f32;
  const Tensor table = Tensor::randn({V, D}, seed, dt);
  std::vector<std::int64_t> id_values, slots;
  for (std::int64_t j = 0; j < T; ++j) {
    id_values.push_back(7 * j % V);
    slots.push_back(j + 1);
  }
  const Tensor ids = Tensor::from_vector(id_values, {T});
  std::vector<Tensor> out;
  const Tensor x = embedding(ids, table, o);  // [T, D]
  const Tensor h = rms_norm(x, Tensor::full({D}, 1.5, dt), 1e-6, o);
  const Tensor qkv = linear(h, Tensor::randn({3 * D, D}, seed + 1, dt), Tensor(), mo);
  const Tensor pos = Tensor::arange(T, DType::i64);
  const Tensor q = rotary(qkv.narrow(1, 0, D).reshape({T, H, hd}).transpose(0, 1), pos, {}, o);
  const Tensor k = rotary(qkv.narrow(1, D, D).reshape({T, H, hd}).transpose(0, 1), pos, {}, o);
  const Tensor cache = Tensor::zeros({H, T + 3, hd}, dt);
  index_copy_(cache, 1, Tensor::from_vector(slots, {T}), k, o);
  const Tensor s = matmul(q, cache.transpose(1, 2), mo);  // [H, T, T + 3]
  const Tensor p = softmax(s, -1, o);
  const Tensor ln = layer_norm(h, Tensor::full({D}, 0.5, dt), Tensor::full({D}, 0.25, dt), 1e-5, o);
  const Tensor act = silu_mul(gelu(ln, o), h, o);
  const Tensor res = add(act, Tensor::randn({D}, seed + 2, dt), o);  // a row broadcast
  const Tensor cat = concat({res, x.flip(0)}, 1, o);
  out.insert(out.end(), {x, h, qkv, q, k, cache, s, p, ln, act, res, cat, sum(cat, 0, false, o),
                         argmax(p, -1, false, o), cast(cast(res, DType::bf16, o), dt, o)});
  return out;
}

}  // namespace

TEST_CASE("concurrency: a block's ops from 8 threads at once, bit-identical (cpu, reference)",
          "[concurrency]") {
  for (const char* backend : {"cpu", "reference"}) {
    INFO("backend " << backend);
    concurrency_test::run_concurrently(8, 5, [&](int i) { return block(i, backend); });
  }
}

TEST_CASE("concurrency: 4 models forward and generate at once, bit-identical (cpu)",
          "[concurrency]") {
  const std::string dir = std::string(STRATA_SOURCE_DIR) + "/models/tiny-llama/";
  const std::vector<std::int64_t> prompt = nn::ByteTokenizer::encode("The cat ");
  concurrency_test::run_concurrently(4, 5, [&](int i) {
    // Each thread its own model (a DecoderLM is not shared between threads).
    nn::DecoderLM model = nn::load_model(dir + "config.json", dir + "model.safetensors");
    const Tensor ids = Tensor::from_vector<std::int64_t>(
        std::vector<std::int64_t>(prompt.begin(), prompt.begin() + 3 + i), {1, 3 + i});
    const Tensor logits = model.forward(ids);
    const nn::GenerationResult g = nn::generate(model, prompt, 6 + i);
    return std::vector<Tensor>{logits, Tensor::from_vector<std::int64_t>(
                                           g.tokens, {static_cast<std::int64_t>(g.tokens.size())})};
  });
}
