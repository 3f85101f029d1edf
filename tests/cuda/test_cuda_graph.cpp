// strata::Graph on cuda, and DecoderLM's decode steps replayed from a
// recorded graph: the same logits and greedy tokens as eager steps, one
// recording for a whole generation, a rewound cache handled, bad ids
// refused on the host before anything runs.
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/module.hpp"
#include "test_core_util.hpp"
#include "test_nn_util.hpp"

using namespace strata;
namespace nn = strata::nn;

namespace {

double max_rel(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double num = 0, den = 1e-30;
  for (std::size_t i = 0; i < x.size(); ++i) {
    num = std::max(num, std::abs(x[i] - y[i]));
    den = std::max(den, std::abs(y[i]));
  }
  return num / den;
}

// The nn tests' tiny models with heads of 16 and a wider hidden size.
nn::ModelConfig config(nn::Arch arch) {
  nn::ModelConfig c = arch == nn::Arch::llama ? nn_test::tiny_llama() : nn_test::tiny_gpt2();
  c.hidden_size = 64;
  c.head_dim = 16;
  c.intermediate_size = 96;
  c.max_position_embeddings = 128;
  return c;
}

// Options that run ops on s.
OpOptions on_stream(const Stream& s) {
  OpOptions opt;
  opt.stream = s.handle();
  return opt;
}

std::int64_t argmax(const Tensor& logits) {
  const auto v = logits.to_vector<float>();
  return std::max_element(v.begin(), v.end()) - v.begin();
}

}  // namespace

TEST_CASE("cuda Graph: a recorded op replays on new inputs", "[cuda][graph]") {
  const Device dev = Device::cuda(0);
  Stream s(dev);
  const OpOptions opt = on_stream(s);
  const Tensor a = Tensor::full({1000}, 1.0, DType::f32, dev);
  const Tensor b = Tensor::full({1000}, 2.0, DType::f32, dev);
  const Tensor y = Tensor::zeros({1000}, DType::f32, dev);
  add_out(y, a, b, opt);  // first use outside the capture
  Graph g = Graph::capture(s, [&] { add_out(y, a, b, opt); });
  REQUIRE(g.defined());
  a.copy_from(Tensor::full({1000}, 5.0));
  g.replay(s);
  s.synchronize();
  for (float v : y.to_vector<float>()) REQUIRE(v == 7.0f);

  CORE_REQUIRE_ERROR(Stream(Device::cpu()), "Stream", "need a device");
  CORE_REQUIRE_ERROR(Graph().replay(s), "Graph::replay", "undefined");
}

// Makes CUDA API errors on purpose: compute-sanitizer runs exclude it
// ("[graph]~[graph_errors]").
TEST_CASE("cuda Graph: a body that allocates is an error, the stream records again",
          "[cuda][graph][graph_errors]") {
  const Device dev = Device::cuda(0);
  Stream s(dev);
  const OpOptions opt = on_stream(s);
  const Tensor y = Tensor::full({1000}, 7.0, DType::f32, dev);
  const Tensor b = Tensor::full({1000}, 2.0, DType::f32, dev);
  add_out(y, y, b, opt);
  CORE_REQUIRE_ERROR(Graph::capture(s, [&] { (void)Tensor::empty({1 << 20}, DType::f32, dev); }),
                     "Graph::capture", "must not allocate", "cudaErrorStreamCaptureImplicit");
  Graph h = Graph::capture(s, [&] { add_out(y, y, b, opt); });
  h.replay(s);
  s.synchronize();
  for (float v : y.to_vector<float>()) REQUIRE(v == 11.0f);
}

TEST_CASE("cuda DecoderLM: decode steps from a graph equal eager steps", "[cuda][graph][nn]") {
  const Device dev = Device::cuda(0);
  for (nn::Arch arch : {nn::Arch::llama, nn::Arch::gpt2}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO((arch == nn::Arch::llama ? "llama " : "gpt2 ") << dtype_name(dt));
      nn::DecoderLM eager(config(arch), dt, dev), graphed(config(arch), dt, dev);
      nn::init_normal(eager, 3, 0.2);
      nn::init_normal(graphed, 3, 0.2);
      eager.graphs(false);
      graphed.graphs(true);
      const std::vector<std::int64_t> prompt = {1, 5, 9, 2, 7, 3, 11, 4};
      const auto T = static_cast<std::int64_t>(prompt.size());
      const Tensor ids = Tensor::from_vector(prompt, {1, T});
      nn::KVCache ce = eager.make_cache(1, 48), cg = graphed.make_cache(1, 48);
      const Tensor le = eager.forward(ids, &ce), lg = graphed.forward(ids, &cg);
      REQUIRE(max_rel(lg, le) == 0.0);  // prefill: the same eager path

      const Tensor step = Tensor::zeros({1, 1}, DType::i64);
      const Tensor out_e = Tensor::empty({1, 1, 64}, DType::f32, dev);
      const Tensor out_g = Tensor::empty({1, 1, 64}, DType::f32, dev);
      std::int64_t next = argmax(le.narrow(1, T - 1, 1));
      const double tol = dt == DType::f32 ? 1e-5 : 2e-2;
      for (int i = 0; i < 24; ++i) {
        INFO("step " << i);
        step.set_item({0, 0}, static_cast<double>(next));
        eager.forward_out(out_e, step, &ce);
        graphed.forward_out(out_g, step, &cg);
        REQUIRE(max_rel(out_g, out_e) < tol);
        next = argmax(out_e);
        REQUIRE(argmax(out_g) == next);
      }
      CHECK(graphed.graph_captures() == 1);
      CHECK(eager.graph_captures() == 0);
      CHECK(cg.length() == T + 24);

      // Rewound caches: the graph's mask follows the cache's length.
      ce.truncate(T + 3);
      cg.truncate(T + 3);
      step.set_item({0, 0}, 17.0);
      eager.forward_out(out_e, step, &ce);
      graphed.forward_out(out_g, step, &cg);
      CHECK(max_rel(out_g, out_e) < tol);
      CHECK(graphed.graph_captures() == 1);

      // A bad id is refused before anything runs or advances.
      step.set_item({0, 0}, 64.0);
      CORE_REQUIRE_ERROR(graphed.forward_out(out_g, step, &cg), "DecoderLM::forward",
                         "ids holds 64 at index 0, outside [0, 64)");
      CHECK(cg.length() == T + 4);

      // Another logits tensor: the same graph, the same answer.
      const Tensor other = Tensor::empty({1, 1, 64}, DType::f32, dev);
      step.set_item({0, 0}, 21.0);
      eager.forward_out(out_e, step, &ce);
      graphed.forward_out(other, step, &cg);
      CHECK(max_rel(other, out_e) < tol);
      CHECK(graphed.graph_captures() == 1);

      // Another cache: recorded again.
      nn::KVCache c2 = graphed.make_cache(1, 48);
      (void)graphed.forward(ids, &c2);
      (void)graphed.forward(step, &c2);
      CHECK(graphed.graph_captures() == 2);
    }
  }
}

TEST_CASE("cuda DecoderLM: a batch of sequences decodes from one graph", "[cuda][graph][nn]") {
  const Device dev = Device::cuda(0);
  nn::DecoderLM eager(config(nn::Arch::llama), DType::f32, dev);
  nn::DecoderLM graphed(config(nn::Arch::llama), DType::f32, dev);
  nn::init_normal(eager, 4, 0.2);
  nn::init_normal(graphed, 4, 0.2);
  eager.graphs(false);
  const Tensor ids = Tensor::from_vector(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
  nn::KVCache ce = eager.make_cache(2, 16), cg = graphed.make_cache(2, 16);
  (void)eager.forward(ids, &ce);
  (void)graphed.forward(ids, &cg);
  const Tensor step = Tensor::from_vector(std::vector<std::int64_t>{9, 10}, {2, 1}, dev);
  for (int i = 0; i < 6; ++i) {
    const Tensor a = eager.forward(step, &ce), b = graphed.forward(step, &cg);
    CHECK(max_rel(b, a) < 1e-5);
  }
  // forward() makes a fresh logits tensor per call; the graph is recorded once.
  CHECK(graphed.graph_captures() == 1);
}
