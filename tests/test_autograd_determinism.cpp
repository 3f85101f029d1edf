// Gradients are the same bits run to run on every available backend
// (docs/guide/autograd.md: no order-dependent atomics): a small network
// with every kind of backward (embedding's scatter-add, linear, norms,
// attention, activations) run twice, compared bit for bit.
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "strata/attention.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/matmul.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/registry.hpp"

using namespace strata;

namespace {

// The gradients' bytes of one forward and backward on `backend`.
std::vector<std::vector<float>> run(const std::string& backend, Device dev) {
  const std::int64_t v = 64, d = 32, t = 48;
  const Tensor table = Tensor::randn({v, d}, 1, DType::f32, dev);
  const Tensor w = Tensor::randn({3 * d, d}, 2, DType::f32, dev);
  const Tensor nw = Tensor::randn({d}, 3, DType::f32, dev);
  // ids with many repeats, so the scatter-add sums several rows into one.
  std::vector<std::int64_t> id_values;
  for (std::int64_t i = 0; i < t; ++i) id_values.push_back((i * 7) % 11);
  const Tensor ids = Tensor::from_vector(id_values, {t}, dev);
  OpOptions o;
  o.backend = backend;
  MatmulOptions mo;
  mo.backend = backend;
  AttentionOptions ao;
  ao.backend = backend;
  ao.causal = Causal::bottom_right;
  autograd::Tape tape;
  for (const Tensor* p : {&table, &w, &nw}) tape.watch(*p);
  const Tensor x = rms_norm(embedding(ids, table, o), nw, 1e-5, o);
  const Tensor qkv = linear(x, w, {}, mo).reshape({t, 3, 2, d / 2});
  auto part = [&](int i) { return qkv.select(1, i).transpose(0, 1); };
  const Tensor a = gelu(softmax_attention(part(0), part(1), part(2), ao), o);
  tape.backward(sum(mean(mean(mul(a, a, o), 2, false, o), 1, false, o), 0, false, o), {}, o);
  std::vector<std::vector<float>> out;
  for (const Tensor* p : {&table, &w, &nw}) out.push_back(tape.grad(*p).to_vector<float>());
  return out;
}

}  // namespace

TEST_CASE("autograd: gradients are the same bits run to run", "[autograd]") {
  for (const BackendInfo& b : Registry::get().backends()) {
    if (!b.compiled || !b.available) continue;
    INFO(b.name);
    const Device dev = b.device == DeviceType::cpu ? Device::cpu() : Device::cuda(0);
    const auto first = run(b.name, dev), second = run(b.name, dev);
    for (std::size_t i = 0; i < first.size(); ++i) {
      REQUIRE(first[i].size() == second[i].size());
      CHECK(std::memcmp(first[i].data(), second[i].data(), first[i].size() * sizeof(float)) == 0);
    }
  }
}
