// Autograd's semantics (strata/autograd.hpp), each against a gradient
// worked out by hand: views of a fused weight, broadcasting, a tensor used
// twice, in-place writes, index_copy_ into a KV cache, detach,
// checkpointing, accumulation into a caller's gradient, freeing, and the
// errors.
#include <memory>
#include <vector>

#include "catch.hpp"
#include "strata/autograd.hpp"
#include "strata/detail/autograd_record.hpp"
#include "strata/elementwise.hpp"
#include "strata/index_copy.hpp"
#include "strata/matmul.hpp"
#include "strata/reduce.hpp"

using namespace strata;

namespace {

Tensor total(const Tensor& t) {  // sum of every element, 0-d
  Tensor s = t;
  while (s.dim() > 0) s = sum(s, 0);
  return s;
}

void require_close(const Tensor& got, const Tensor& want, double tol = 1e-12) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i)
    REQUIRE(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i])));
}

}  // namespace

TEST_CASE("autograd: slices of a fused QKV weight send their gradients into it", "[autograd]") {
  const std::int64_t n = 3, in = 4;
  const Tensor w = Tensor::randn({3 * n, in}, 1, DType::f64);
  const Tensor x = Tensor::randn({5, in}, 2, DType::f64);
  autograd::Tape tape;
  tape.watch(w);
  const Tensor q = linear(x, w.narrow(0, 0, n), {});
  const Tensor k = linear(x, w.narrow(0, n, n), {});
  tape.backward(total(mul(q, k)));
  // loss = sum(q k): dq = k, dk = q; dWq = k^T x, dWk = q^T x, dWv = 0.
  const Tensor dw = tape.grad(w);
  require_close(dw.narrow(0, 0, n), matmul(k.transpose(0, 1), x));
  require_close(dw.narrow(0, n, n), matmul(q.transpose(0, 1), x));
  require_close(dw.narrow(0, 2 * n, n), Tensor::zeros({n, in}, DType::f64));
}

TEST_CASE("autograd: a tensor used twice accumulates; broadcasting sums back", "[autograd]") {
  const Tensor x = Tensor::randn({4, 3}, 3, DType::f64);
  const Tensor b = Tensor::randn({3}, 4, DType::f64);
  autograd::Tape tape;
  tape.watch(x);
  tape.watch(b);
  tape.backward(total(add(mul(x, x), b)));  // d/dx = 2x, d/db = 4 (rows) each
  require_close(tape.grad(x), mul(x, 2.0));
  require_close(tape.grad(b), Tensor::full({3}, 4.0, DType::f64));
}

TEST_CASE("autograd: a broadcast (stride 0) view's gradient is summed into its memory",
          "[autograd]") {
  const Tensor w = Tensor::randn({3}, 5, DType::f64);
  autograd::Tape tape;
  tape.watch(w);
  const Tensor e = w.expand({4, 3});
  tape.backward(total(mul(e, e)));  // sum over 4 rows of w^2: 8 w
  require_close(tape.grad(w), mul(w, 8.0));
}

TEST_CASE("autograd: what an in-place write overwrote gets no gradient", "[autograd]") {
  const Tensor a = Tensor::from_vector<double>({1.5, -2.0}, {2});
  const Tensor buf = Tensor::zeros({4}, DType::f64);
  autograd::Tape tape;
  tape.watch(a);
  copy_(buf.narrow(0, 0, 2), a);
  copy_(buf.narrow(0, 0, 1), Tensor::full({1}, 7.0, DType::f64));  // a[0]'s copy is gone
  const Tensor wts = Tensor::from_vector<double>({1, 2, 3, 4}, {4});
  tape.backward(total(mul(buf, wts)));
  require_close(tape.grad(a), Tensor::from_vector<double>({0, 2}, {2}));
}

TEST_CASE("autograd: index_copy_ into a view of a KV cache, by hand and by differences",
          "[autograd]") {
  // The k half of a fused cache [2, B, H, L, hd] takes the past (watched) by
  // copy_, then index_copy_ writes new keys, a strided view of a projection
  // of x by the watched w, at positions 4 and 1 of dim 2.
  const std::int64_t B = 2, H = 2, L = 6, hd = 3, T = 2, in = 4;
  const Tensor past = Tensor::randn({B, H, L, hd}, 21, DType::f64);
  const Tensor w = Tensor::randn({H * hd, in}, 22, DType::f64);
  const Tensor x = Tensor::randn({B, T, in}, 23, DType::f64);
  const Tensor g = Tensor::randn({B, H, L, hd}, 24, DType::f64);
  const std::vector<std::int64_t> pos{4, 1};
  const auto loss = [&](const Tensor& past_in, const Tensor& w_in) {  // sum(k cache * g)
    const Tensor k = Tensor::zeros({2, B, H, L, hd}, DType::f64).select(0, 0);
    copy_(k, past_in);
    const Tensor k_new = linear(x, w_in, {}).reshape({B, T, H, hd}).transpose(1, 2);
    index_copy_(k, 2, Tensor::from_vector(pos, {T}), k_new);
    return total(mul(k, g));
  };
  autograd::Tape tape;
  tape.watch(past);
  tape.watch(w);
  tape.backward(loss(past, w));

  // By hand: the past keeps g except at the written positions; the new key
  // at t gets g at pos[t], so dw[h hd + j, i] = sum over b, t of
  // g[b, h, pos[t], j] x[b, t, i].
  const Tensor want_past = g.clone(), want_w = Tensor::zeros({H * hd, in}, DType::f64);
  for (std::int64_t bb = 0; bb < B; ++bb)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t j = 0; j < hd; ++j)
        for (std::int64_t t = 0; t < T; ++t) {
          want_past.set_item({bb, h, pos[t], j}, 0.0);
          for (std::int64_t i = 0; i < in; ++i)
            want_w.set_item({h * hd + j, i}, want_w.at({h * hd + j, i}) +
                                                 g.at({bb, h, pos[t], j}) * x.at({bb, t, i}));
        }
  require_close(tape.grad(past), want_past);
  require_close(tape.grad(w), want_w);

  // Central differences (the loss is linear in both: exact up to rounding).
  for (const Tensor& p : {past, w}) {
    const Tensor flat = p.reshape({-1});
    const std::vector<double> grad = tape.grad(p).to_vector<double>();
    for (std::int64_t e = 0; e < flat.numel(); ++e) {
      const double v = flat.at({e});
      flat.set_item({e}, v + 0.5);
      const double up = loss(past, w).item();
      flat.set_item({e}, v - 0.5);
      const double down = loss(past, w).item();
      flat.set_item({e}, v);
      INFO("element " << e);
      REQUIRE(std::abs((up - down) - grad[static_cast<std::size_t>(e)]) <=
              1e-12 * (1 + std::abs(up)));
    }
  }
}

TEST_CASE("autograd: clone, contiguous and to(dtype) carry gradients", "[autograd]") {
  const Tensor x = Tensor::randn({3, 2}, 6, DType::f64);
  autograd::Tape tape;
  tape.watch(x);
  const Tensor c = x.transpose(0, 1).contiguous().to(DType::f32).to(DType::f64).clone();
  tape.backward(total(mul(c, c)));
  require_close(tape.grad(x), mul(x, 2.0), 1e-6);
}

TEST_CASE("autograd: detach stops the gradient, without a copy", "[autograd]") {
  const Tensor x = Tensor::randn({5}, 7, DType::f64);
  autograd::Tape tape;
  tape.watch(x);
  const Tensor d = autograd::detach(x);
  CHECK(d.data_ptr() == x.data_ptr());
  tape.backward(total(mul(d, x)));  // d/dx = d = x, not 2x
  require_close(tape.grad(x), x);
}

TEST_CASE("autograd: a checkpointed block gives the gradients of the plain one", "[autograd]") {
  const Tensor w = Tensor::randn({6, 4}, 8, DType::f64);
  const Tensor x = Tensor::randn({3, 4}, 9, DType::f64);
  auto block = [&w](const std::vector<Tensor>& in) { return gelu(linear(in[0], w, {})); };
  Tensor plain_w, plain_x;
  {
    autograd::Tape tape;
    tape.watch(w);
    tape.watch(x);
    tape.backward(total(tanh(block({x}))));
    plain_w = tape.grad(w).clone();
    plain_x = tape.grad(x).clone();
  }
  autograd::Tape tape;
  tape.watch(w);
  tape.watch(x);
  tape.backward(total(tanh(autograd::checkpoint(block, {x}))));
  require_close(tape.grad(w), plain_w, 0);
  require_close(tape.grad(x), plain_x, 0);
}

TEST_CASE("autograd: backward adds into the caller's gradient tensor", "[autograd]") {
  const Tensor w = Tensor::randn({2, 3}, 10, DType::f64);
  const Tensor x = Tensor::randn({4, 3}, 11, DType::f64);
  const Tensor gw = Tensor::full({2, 3}, 1.0, DType::f64);
  autograd::Tape tape;
  tape.watch(w, gw);
  tape.backward(total(linear(x, w, {})));  // dW[o] = sum of x's rows
  require_close(gw, add(sum(x, 0, true).expand({2, 3}), 1.0));
  CHECK(tape.grad(w).data_ptr() == gw.data_ptr());
}

TEST_CASE("autograd: saved activations are freed by backward", "[autograd]") {
  const Tensor x = Tensor::randn({8}, 12, DType::f64);
  autograd::Tape tape;
  tape.watch(x);
  std::weak_ptr<Storage> saved;
  Tensor loss;
  {
    const Tensor h = exp(x);  // exp saves its output
    saved = h.storage();
    loss = total(mul(h, 3.0));
  }
  CHECK_FALSE(saved.expired());  // the tape holds it for the backward
  tape.backward(loss);
  CHECK(saved.expired());
  require_close(tape.grad(x), mul(exp(x), 3.0));
}

TEST_CASE("autograd: nothing records without a tape or under NoGrad", "[autograd]") {
  const Tensor x = Tensor::randn({3}, 13, DType::f64);
  CHECK(autograd::detail::recording_tape() == nullptr);
  autograd::Tape tape;
  tape.watch(x);
  Tensor y;
  {
    const autograd::NoGrad pause;
    CHECK(autograd::detail::recording_tape() == nullptr);
    y = mul(x, 2.0);
  }
  CHECK(tape.recording());
  CHECK_THROWS_WITH(tape.backward(total(y)), ContainsText("does not depend on any watched tensor"));
}

TEST_CASE("autograd: errors name the op and leave memory unwritten", "[autograd]") {
  const Tensor a = Tensor::randn({4}, 14, DType::f64);
  const Tensor b = Tensor::randn({4}, 15, DType::f64);
  SECTION("an in-place op over an input its backward reads") {
    const Tensor h = add(a, 0.0);
    autograd::Tape tape;
    tape.watch(b);
    const Tensor h2 = mul(h, b);
    const auto before = h2.to_vector<double>();
    CHECK_THROWS_WITH(mul_out(h2, h2, b), ContainsText("mul") && ContainsText("backward reads"));
    CHECK(h2.to_vector<double>() == before);
  }
  SECTION("writing into a watched tensor") {
    autograd::Tape tape;
    tape.watch(a);
    const auto before = a.to_vector<double>();
    CHECK_THROWS_WITH(add_out(a, a, b), ContainsText("watched"));
    CHECK(a.to_vector<double>() == before);
  }
  SECTION("an op without a backward (a backward kernel: no second derivative)") {
    autograd::Tape tape;
    tape.watch(b);
    CHECK_THROWS_WITH(relu_backward(a, b),
                      ContainsText("relu_backward") && ContainsText("no backward yet"));
  }
  SECTION("index_copy_ into a watched tensor") {
    const Tensor dst = Tensor::zeros({4, 3}, DType::f64);
    const Tensor src = Tensor::randn({2, 3}, 16, DType::f64);
    autograd::Tape tape;
    tape.watch(dst);
    CHECK_THROWS_WITH(index_copy_(dst, 0, Tensor::from_vector<std::int64_t>({0, 2}, {2}), src),
                      ContainsText("index_copy_") && ContainsText("watched"));
    for (double v : dst.to_vector<double>()) CHECK(v == 0);
  }
  SECTION("backward twice") {
    autograd::Tape tape;
    tape.watch(a);
    const Tensor l = total(mul(a, b));
    tape.backward(l);
    CHECK_THROWS_WITH(tape.backward(l), ContainsText("already run backward"));
  }
}

// Tape::profile_backward counts every recorded node's backward once, under
// its op's name, and gives the same gradients as a plain backward.
TEST_CASE("autograd: a profiled backward names each op and its nodes", "[autograd]") {
  const Tensor w = Tensor::randn({4, 3}, 1, DType::f64);
  const Tensor x = Tensor::randn({5, 4}, 2, DType::f64);
  const auto run = [&](bool profile, Tensor& gw) {
    autograd::Tape tape;
    tape.watch(w);
    const Tensor y = matmul(matmul(x, w), w.transpose(0, 1));  // two matmuls
    const Tensor loss = total(mul(y, y));
    if (profile) tape.profile_backward();
    tape.backward(loss);
    gw = tape.grad(w);
    return tape.backward_profile();
  };
  Tensor plain, profiled;
  CHECK(run(false, plain).empty());  // nothing timed unless asked
  const std::vector<autograd::OpTime> ops = run(true, profiled);
  require_close(profiled, plain, 0.0);
  std::int64_t matmuls = 0, muls = 0, nodes = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    CHECK(ops[k].ms >= 0);
    if (k > 0) CHECK(ops[k - 1].ms >= ops[k].ms);  // most time first
    if (ops[k].op == "matmul") matmuls = ops[k].calls;
    if (ops[k].op == "mul") muls = ops[k].calls;
    nodes += ops[k].calls;
  }
  CHECK(matmuls == 2);
  CHECK(muls == 1);
  CHECK(nodes >= 4);  // and the sums of total()
}
