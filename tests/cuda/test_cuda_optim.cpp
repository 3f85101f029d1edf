// adamw_step_ / sgd_step_ on the cuda backend against the reference
// (optim_case.hpp): every rule, param dtype, grad dtype and master form on
// tensors of one and several chunks; the vector path (four elements per
// access) and the scalar one (views off their alignment), sizes around
// both; grad_scale equal to a separate mul_out bit for bit; calls that need
// more than one launch (more tensors than a launch's table holds, a tensor
// of more chunks than a launch's blocks, and both, cut mid-tensor);
// sum_of_squares against a host sum (squares_case.hpp) and over several
// launches; grad_norm on cuda equal to cpu; and nn::AdamW with bf16 params
// and f32 masters on cuda equal to the same run on cpu. Part of
// strata_cuda_tests, which exits 77 (skip) on a machine without a GPU.
#include <cmath>
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "optim_case.hpp"
#include "squares_case.hpp"
#include "strata/elementwise.hpp"
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

TEST_CASE("cuda adamw_step_ / sgd_step_: vector and scalar paths against the reference",
          "[cuda][optim]") {
  // Sizes around the 4-element vectors and the 65536-element chunks; with
  // offset 1 every other tensor is a view one element into its buffer (the
  // scalar path), the rest aligned (the vector path and its tail).
  const std::vector<Shape> shapes{{4}, {5}, {65535}, {65537}, {3, 7}, {8}, {131075}, {2}};
  for (const std::int64_t offset : {0, 1, 2})
    for (optim_test::Case c : optim_test::standard_cases(shapes)) {
      c.offset = offset;
      INFO(optim_test::describe(c));
      optim_test::check_against_reference(c, "cuda", kGpu);
    }
}

TEST_CASE("cuda adamw_step_ / sgd_step_: grad_scale is a separate mul_out, bit for bit",
          "[cuda][optim]") {
  const std::vector<Shape> shapes{{3}, {70000}, {17, 5}, {0, 4}, {1}, {65541}};
  for (optim_test::Case c : optim_test::standard_cases(shapes)) {
    c.grad_scale = 0.3712345678901;
    INFO(optim_test::describe(c));
    optim_test::check_grad_scale(c, "cuda", kGpu);
  }
}

TEST_CASE("cuda adamw_step_: calls of several launches", "[cuda][optim]") {
  // 200 small tensors (a launch's table holds 160), then one tensor of 330
  // chunks between small ones, 240 of them: the table is cut inside the
  // run of tensors and the rest carries over.
  std::vector<Shape> many;
  for (int i = 0; i < 200; ++i) many.push_back({1 + 37 * i});
  std::vector<Shape> big{{5}, {330 * 65536 + 11}, {7}, {65536}};
  for (int i = 0; i < 240; ++i) big.push_back({3 + i});
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

TEST_CASE("cuda sgd_step_: a tensor of more chunks than a launch has blocks", "[cuda][optim]") {
  // 3100 chunks of 65536 (a launch holds 3072 blocks) between small
  // tensors: p = 1 - 0.5 * 0.5 is exact, so a chunk updated twice or not at
  // all leaves an element other than 0.75, which the sum of (p - 0.75)^2
  // shows.
  const std::vector<std::int64_t> sizes{3, 3100 * std::int64_t{65536} + 5, 70000, 1};
  std::vector<Tensor> p, g;
  for (const std::int64_t n : sizes) {
    p.push_back(Tensor::full({n}, 1.0, DType::f32, kGpu));
    g.push_back(Tensor::full({n}, 0.5, DType::f32, kGpu));
  }
  SGDStep s;
  s.lr = 0.5;
  sgd_step_(p, g, {}, {}, s, ops_test::on("cuda"));
  std::vector<Tensor> off;
  for (const Tensor& t : p) off.push_back(sub(t, 0.75, ops_test::on("cuda")));
  CHECK(sum_of_squares(off, ops_test::on("cuda")).to(Device::cpu()).item<double>() == 0.0);
  CHECK(sum_of_squares(p, ops_test::on("cuda")).to(Device::cpu()).item<double>() ==
        0.5625 * static_cast<double>(sizes[0] + sizes[1] + sizes[2] + sizes[3]));
}

TEST_CASE("cuda sum_of_squares against a host sum", "[cuda][optim][sum_of_squares]") {
  // Sizes that cut the 65536-element chunks and the 4-element vectors at
  // odd places; offsets 1 and 2 put every other tensor off its alignment.
  const std::vector<Shape> shapes{{1},    {7}, {0, 4}, {65535},  {65536}, {65537},
                                  {3, 5}, {0}, {4},    {131077}, {200003}};
  for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16})
    for (const bool integral : {true, false})
      for (const std::int64_t offset : {0, 1, 2})
        squares_test::check_against_host(shapes, dt, "cuda", kGpu, integral, offset);
  CHECK(sum_of_squares({Tensor::zeros({0}, DType::f32, kGpu)}, ops_test::on("cuda")).device() ==
        kGpu);
  CHECK(sum_of_squares({Tensor::zeros({0}, DType::f32, kGpu)}, ops_test::on("cuda"))
            .to(Device::cpu())
            .item<double>() == 0.0);
}

TEST_CASE("cuda sum_of_squares: calls of several launches", "[cuda][optim][sum_of_squares]") {
  // 300 tensors (a launch's table holds 256) against the host sum, and a
  // tensor of 4100 chunks (a launch holds 4096 blocks) between small ones,
  // of a constant whose squares add up exactly: every chunk counted once.
  std::vector<Shape> many;
  for (int i = 0; i < 300; ++i) many.push_back({1 + 53 * i});
  squares_test::check_against_host(many, DType::f32, "cuda", kGpu, true);
  squares_test::check_against_host(many, DType::bf16, "cuda", kGpu, false, 1);
  const std::vector<std::int64_t> sizes{5, 4100 * std::int64_t{65536} + 3, 9};
  std::vector<Tensor> ts;
  for (const std::int64_t n : sizes) ts.push_back(Tensor::full({n}, 0.5, DType::bf16, kGpu));
  const double got = sum_of_squares(ts, ops_test::on("cuda")).to(Device::cpu()).item<double>();
  CHECK(got == 0.25 * static_cast<double>(sizes[0] + sizes[1] + sizes[2]));
}

TEST_CASE("cuda grad_norm equals cpu", "[cuda][optim][sum_of_squares]") {
  nn::Linear host(300, 200, true, DType::bf16);
  for (const auto& [name, g] : host.named_gradients())
    g.copy_from(Tensor::randn(g.shape(), 31, DType::f64).to(g.dtype()));
  nn::Linear dev = host;
  dev.to(kGpu);
  for (const auto& [name, g] : dev.named_gradients()) g.copy_from(host.grad(name).to(kGpu));
  const double a = nn::grad_norm(host), b = nn::grad_norm(dev);
  CHECK(std::abs(a - b) <= 1e-13 * a);
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
