// cross_entropy and its backward on the cuda backend against the reference
// (docs/guide/ops.md, "cross_entropy"): rows of a GPT-2 sized vocabulary
// (50304: vector loads, several tiles per block) and of 37 (a warp per
// row), 16-bit logits read natively, the gradient through the tape; a bad
// target (an error, out untouched); the backward written over a buffer
// that held values; and determinism (two runs bit for bit).
// Every layout and dtype at small sizes: the op runner's descriptors, which
// strata_tests runs on every available backend. Runs only with a GPU
// (main.cpp exits 77 otherwise).
#include <cstdint>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda_compare.hpp"
#include "strata/autograd.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "test_core_util.hpp"

using namespace strata;
using namespace cuda_test;
using R = CrossEntropyOptions::Reduction;

namespace {

// rows targets in [0, v), every fifth row ignored.
Tensor targets(std::int64_t rows, std::int64_t v) {
  std::vector<std::int64_t> t;
  for (std::int64_t r = 0; r < rows; ++r) t.push_back(r % 5 == 4 ? -100 : (r * 7919) % v);
  return Tensor::from_vector(t, {rows});
}

// The loss (R) and d loss / d logits of cross_entropy on `opt`'s backend.
struct Result {
  Tensor loss, grad;
};
Result run(const Tensor& x, const Tensor& t, R red, const OpOptions& opt) {
  CrossEntropyOptions ce;
  ce.reduction = red;
  autograd::Tape tape;
  const Tensor g = Tensor::zeros(x.shape(), x.dtype(), x.device());
  tape.watch(x, g);
  const Tensor loss = cross_entropy(x, t, ce, opt);
  const Tensor seed = Tensor::full(loss.shape(), 0.5, loss.dtype(), loss.device());
  tape.backward(loss, seed, opt);
  return {loss, g};
}

}  // namespace

TEST_CASE("cross_entropy cuda vs reference: long and short rows, every dtype",
          "[ops][rows][cuda][cross_entropy]") {
  for (const std::int64_t v : {std::int64_t{50304}, std::int64_t{37}}) {
    for (DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      INFO("V " << v << " " << dtype_name(dt));
      const std::int64_t rows = 12;
      const Tensor x = mul(Tensor::randn({rows, v}, 3, DType::f32), 3.0).to(dt);
      const Tensor t = targets(rows, v);
      for (R red : {R::none, R::mean}) {
        const Result want = run(x, t, red, kRef);
        const Result got = run(x.to(kGpu), t.to(kGpu), red, kCuda);
        // The loss is f32 maths on the stored logits: sums of up to a few
        // hundred terms per thread, so some 1e-5 of lse at worst.
        const bool f64 = dt == DType::f64;
        require_close(got.loss, want.loss, f64 ? 1e-12 : 2e-5, f64 ? 1e-12 : 2e-6);
        // The gradient: exp(x - lse) inherits lse's error as a relative one,
        // then is stored in the logits' dtype (f16's subnormals: the atol).
        const double gt = f64 ? 1e-12 : dt == DType::f32 ? 2e-5 : tol(dt);
        require_close(got.grad, want.grad, f64 ? 1e-15 : 1e-7, gt);
      }
    }
  }
}

TEST_CASE("cross_entropy cuda: a bad target is an error, out untouched",
          "[ops][rows][cuda][cross_entropy]") {
  const Tensor x = Tensor::randn({3, 40}, 1).to(kGpu);
  const Tensor out = Tensor::full({3}, 7.25, DType::f32, kGpu);
  CrossEntropyOptions ce;
  ce.reduction = R::none;
  for (const std::vector<std::int64_t>& bad :
       {std::vector<std::int64_t>{0, 40, 1}, std::vector<std::int64_t>{0, 1, -3}}) {
    const Tensor t = Tensor::from_vector(bad, {3}).to(DType::i32).to(kGpu);
    const std::string msg = core_test::error_of([&] { cross_entropy_out(out, x, t, ce, kCuda); });
    INFO(msg);
    CHECK(msg.rfind("cross_entropy: target holds ", 0) == 0);
    CHECK(msg.find("outside [0, 40) and not ignore_index (-100)") != std::string::npos);
    REQUIRE(out.to(Device::cpu()).to_vector<double>() == std::vector<double>(3, 7.25));
  }
}

TEST_CASE("cross_entropy cuda: deterministic, bit for bit", "[ops][rows][cuda][cross_entropy]") {
  const Tensor x = Tensor::randn({256, 4099}, 9, DType::bf16).to(kGpu);
  const Tensor t = targets(256, 4099).to(kGpu);
  const Result a = run(x, t, R::mean, kCuda), b = run(x, t, R::mean, kCuda);
  REQUIRE(a.loss.to(Device::cpu()).to_vector<double>() ==
          b.loss.to(Device::cpu()).to_vector<double>());
  REQUIRE(a.grad.to(Device::cpu()).to_vector<double>() ==
          b.grad.to(Device::cpu()).to_vector<double>());
}

TEST_CASE("cross_entropy_backward cuda: written over what the buffer held (no accumulate)",
          "[ops][rows][cuda][cross_entropy]") {
  // Rows of 50304 (the long-row kernels) and 37; every fifth row ignored
  // must come out exactly zero, the others as the reference.
  for (const std::int64_t v : {std::int64_t{50304}, std::int64_t{37}}) {
    for (DType dt : {DType::f32, DType::bf16}) {
      INFO("V " << v << " " << dtype_name(dt));
      const std::int64_t rows = 10;
      const Tensor x = mul(Tensor::randn({rows, v}, 5, DType::f32), 2.0).to(dt);
      const Tensor t = targets(rows, v);
      const Tensor grad = Tensor::full({rows}, 0.25, DType::f32);
      const Tensor lse = Tensor::empty({rows}, DType::f32);
      CrossEntropyOptions ce;
      ce.reduction = R::none;
      cross_entropy_out(Tensor::empty({rows}, DType::f32), x, t, ce, kRef, lse);
      const Tensor want = Tensor::full({rows, v}, 7.25, dt);
      cross_entropy_backward_out(want, grad, x, t, lse, -100, false, kRef);
      const Tensor got = Tensor::full({rows, v}, 7.25, dt, kGpu);
      cross_entropy_backward_out(got, grad.to(kGpu), x.to(kGpu), t.to(kGpu), lse.to(kGpu), -100,
                                 false, kCuda);
      require_close(got, want, 1e-7, dt == DType::f32 ? 2e-5 : tol(dt));
      const std::vector<double> g = got.to(Device::cpu()).to_vector<double>();
      for (std::int64_t r = 4; r < rows; r += 5)
        for (std::int64_t j = 0; j < v; ++j) REQUIRE(g[r * v + j] == 0.0);
    }
  }
}
