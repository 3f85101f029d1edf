// adamw_step_ / sgd_step_ on the cuda backend against the reference
// (optim_case.hpp): every rule, param dtype, grad dtype and master form on
// tensors of one and several chunks; calls that need more than one launch
// (more tensors than a launch's table holds, a tensor of more chunks than
// a launch's blocks, and both, cut mid-tensor); and nn::AdamW with bf16
// params and f32 masters on cuda equal to the same run on cpu. Part of
// strata_cuda_tests, which exits 77 (skip) on a machine without a GPU.
#include <vector>

#include "catch.hpp"
#include "optim_case.hpp"
#include "strata/nn/layers.hpp"
#include "strata/nn/optim.hpp"

using namespace strata;

namespace {
const Device kGpu = Device::cuda(0);
}  // namespace

TEST_CASE("cuda adamw_step_ / sgd_step_ against the reference", "[cuda][optim]") {
  // 70000 and 200000 elements: two and four chunks of 65536.
  const std::vector<Shape> shapes{{3}, {70000}, {17, 5}, {0, 4}, {1}, {200000}};
  for (const optim_test::Case& c : optim_test::standard_cases(shapes)) {
    INFO(optim_test::describe(c));
    optim_test::check_against_reference(c, "cuda", kGpu);
  }
}

TEST_CASE("cuda adamw_step_: calls of several launches", "[cuda][optim]") {
  // 80 small tensors (a launch's table holds 36), then one tensor of 330
  // chunks (a launch holds 320 blocks) between small ones: the table is
  // cut inside a tensor and the rest carries over.
  std::vector<Shape> many;
  for (int i = 0; i < 80; ++i) many.push_back({1 + 37 * i});
  std::vector<Shape> big{{5}, {330 * 65536 + 11}, {7}, {65536}};
  for (int i = 0; i < 40; ++i) big.push_back({3 + i});
  for (const auto& shapes : {many, big}) {
    for (const DType p : {DType::f32, DType::bf16}) {
      optim_test::Case c;
      c.param = p;
      c.grad = p;
      c.master = p == DType::bf16;
      c.shapes = shapes;
      INFO(optim_test::describe(c) << ", " << shapes.size() << " tensors");
      optim_test::check_against_reference(c, "cuda", kGpu);
    }
  }
}

TEST_CASE("cuda nn::AdamW with bf16 params and f32 masters equals cpu", "[cuda][optim][bf16]") {
  nn::Linear host(64, 48, true, DType::bf16);
  nn::init_normal(host, 8, 0.5);
  nn::Linear dev = host;
  dev.to(kGpu);
  nn::AdamWOptions o;
  o.weight_decay = 0.1;
  nn::AdamW oh(host, o), od(dev, o);
  for (int s = 0; s < 5; ++s) {
    for (nn::Linear* l : {&host, &dev})
      for (const auto& [name, g] : l->named_gradients())
        g.copy_from(Tensor::randn(g.shape(), 70 + s, DType::f64).to(DType::bf16));
    oh.step(1e-3);
    od.step(1e-3);
  }
  const nn::NamedState sh = oh.state(), sd = od.state();
  REQUIRE(sh.size() == sd.size());
  for (std::size_t i = 0; i < sh.size(); ++i) {
    INFO(sh[i].first);
    const std::vector<double> a = sh[i].second.to(Device::cpu()).to_vector<double>();
    const std::vector<double> b = sd[i].second.to(Device::cpu()).to_vector<double>();
    CHECK(ops_test::first_out_of_tolerance(b, a, 1e-7, 1e-5) == b.size());
  }
  // The params: the masters rounded on both, so at most one bf16 ulp apart.
  const std::vector<double> a = host.weight.to_vector<double>();
  const std::vector<double> b = dev.weight.to(Device::cpu()).to_vector<double>();
  CHECK(ops_test::first_out_of_tolerance(b, a, 1e-6, 8e-3) == b.size());
}
