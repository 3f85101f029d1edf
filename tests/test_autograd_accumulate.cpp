// How the tape puts contributions into gradient memory: the first one
// written straight in (matmul with beta = 0, or a copy) with nothing zeroed,
// later ones added (beta = 1), a slice of a fused base zeroed first, and a
// caller's seed read in place but never written. Every expected gradient is
// worked out by hand and computed in f64 on the reference backend; the
// tape's side runs on the cpu backend in f32. Gradient memory is allocated
// where a NaN-filled block of the same size was just freed, so a gradient
// element nothing wrote shows up as NaN rather than as a lucky zero.
#include <cmath>
#include <limits>

#include "catch.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/matmul.hpp"
#include "strata/reduce.hpp"

using namespace strata;

namespace {

MatmulOptions on(const char* backend) {
  MatmulOptions o;
  o.backend = backend;
  return o;
}

// The exact product in f64 on the reference backend.
Tensor ref_mm(const Tensor& a, const Tensor& b) {
  return matmul(cast(a, DType::f64), cast(b, DType::f64), on("reference"));
}

Tensor total(const Tensor& t) {  // sum of every element, 0-d
  Tensor s = t;
  while (s.dim() > 0) s = sum(s, 0);
  return s;
}

// Frees a NaN-filled block of `like`'s size: the host block cache (and
// malloc) hand it to the next allocation of that size.
void poison(const Tensor& like) {
  const Tensor t =
      Tensor::full(like.shape(), std::numeric_limits<double>::quiet_NaN(), like.dtype());
  (void)t;
}

void require_close(const Tensor& got, const Tensor& want) {
  REQUIRE(got.shape() == want.shape());
  const auto g = got.to_vector<double>(), w = want.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << w[i]);
    REQUIRE(std::abs(g[i] - w[i]) <= 1e-4 * (1 + std::abs(w[i])));
  }
}

constexpr std::int64_t kM = 96, kN = 256, kK = 256;  // w [N, K]: 256 KiB in f32

}  // namespace

TEST_CASE("autograd accumulate: a tensor used twice by one matmul (x x^T)", "[autograd]") {
  const Tensor x = Tensor::randn({kN, kK}, 11), s = Tensor::randn({kN, kN}, 12);
  // y = x x^T, seed s: dx = s x + s^T x, the second product added to the first.
  const Tensor want = add(ref_mm(s, x), ref_mm(s.transpose(0, 1), x));
  for (const bool prior : {false, true}) {
    INFO("caller's gradient " << (prior ? "holding ones" : "absent"));
    const Tensor gx = Tensor::full({kN, kK}, 1.0);
    poison(x);
    autograd::Tape tape;
    if (prior) {
      tape.watch(x, gx);
    } else {
      tape.watch(x);
    }
    const Tensor y = matmul(x, x.transpose(0, 1), on("cpu"));
    tape.backward(y, s, on("cpu"));
    require_close(tape.grad(x), prior ? add(want, 1.0) : want);
  }
}

TEST_CASE("autograd accumulate: a weight and an input each used by two linears", "[autograd]") {
  const Tensor x = Tensor::randn({kM, kK}, 21), x2 = Tensor::randn({kM, kK}, 22);
  const Tensor w = Tensor::randn({kN, kK}, 23), w3 = Tensor::randn({kN, kK}, 24);
  const Tensor s1 = Tensor::randn({kM, kN}, 25), s2 = Tensor::randn({kM, kN}, 26),
               s3 = Tensor::randn({kM, kN}, 27);
  // loss = sum(s1 (x w^T) + s2 (x2 w^T) + s3 (x w3^T)):
  // dw = s1^T x + s2^T x2, dx = s1 w + s3 w3.
  const Tensor want_w = add(ref_mm(s1.transpose(0, 1), x), ref_mm(s2.transpose(0, 1), x2));
  const Tensor want_x = add(ref_mm(s1, w), ref_mm(s3, w3));
  poison(w);
  autograd::Tape tape;
  tape.watch(x);
  tape.watch(w);
  const MatmulOptions o = on("cpu");
  const Tensor y1 = linear(x, w, {}, o), y2 = linear(x2, w, {}, o), y3 = linear(x, w3, {}, o);
  tape.backward(total(add(add(mul(y1, s1), mul(y2, s2)), mul(y3, s3))), {}, o);
  require_close(tape.grad(w), want_w);
  require_close(tape.grad(x), want_x);
}

TEST_CASE("autograd accumulate: gradients into views of a fused base and a transposed weight",
          "[autograd]") {
  const std::int64_t n = kN / 2;
  const Tensor fused = Tensor::randn({3 * n, kK}, 31), wt = Tensor::randn({kN, kK}, 32);
  const Tensor x = Tensor::randn({kM, kK}, 33);
  const Tensor s1 = Tensor::randn({kM, n}, 34), s2 = Tensor::randn({kM, n}, 35),
               s3 = Tensor::randn({kM, kN}, 36);
  poison(fused);
  poison(wt);
  autograd::Tape tape;
  tape.watch(fused);
  tape.watch(wt);
  const MatmulOptions o = on("cpu");
  // q through linear on the first slice; v through matmul on the third
  // slice, transposed; the middle slice unused. wt is read whole but
  // transposed: its first contribution covers it, written through strides.
  const Tensor q = linear(x, fused.narrow(0, 0, n), {}, o);
  const Tensor v = matmul(x, fused.narrow(0, 2 * n, n).transpose(0, 1), o);
  const Tensor z = matmul(x, wt.transpose(0, 1), o);
  tape.backward(total(add(add(total(mul(q, s1)), total(mul(v, s2))), total(mul(z, s3)))), {}, o);
  const Tensor d = tape.grad(fused);
  require_close(d.narrow(0, 0, n), ref_mm(s1.transpose(0, 1), x));
  require_close(d.narrow(0, n, n), Tensor::zeros({n, kK}, DType::f64));
  require_close(d.narrow(0, 2 * n, n), ref_mm(s2.transpose(0, 1), x));
  require_close(tape.grad(wt), ref_mm(s3.transpose(0, 1), x));
}

TEST_CASE("autograd accumulate: the caller's seed is read in place, never written", "[autograd]") {
  const Tensor x = Tensor::randn({kM, kK}, 41), w = Tensor::randn({kN, kK}, 42);
  const Tensor seed = Tensor::randn({kM, kN}, 43);
  const auto seed_before = seed.to_vector<float>();
  const MatmulOptions o = on("cpu");
  SECTION("the loss overwritten in place: its old value's gradient is zeroed") {
    autograd::Tape tape;
    tape.watch(w);
    const Tensor y = linear(x, w, {}, o);
    mul_out(y, y, 2.0, o);  // y = 2 (x w^T): dw = 2 seed^T x
    tape.backward(y, seed, o);
    REQUIRE(seed.to_vector<float>() == seed_before);
    require_close(tape.grad(w), mul(ref_mm(seed.transpose(0, 1), x), 2.0));
  }
  SECTION("a watched loss keeps its gradient when the seed changes after") {
    autograd::Tape tape;
    tape.watch(w);
    const Tensor y = linear(x, w, {}, o);
    tape.watch(y);
    tape.backward(y, seed, o);
    fill_(seed, 0.0);
    require_close(tape.grad(y),
                  cast(Tensor::from_vector<float>(seed_before, {kM, kN}), DType::f64));
    require_close(tape.grad(w),
                  ref_mm(Tensor::from_vector<float>(seed_before, {kM, kN}).transpose(0, 1), x));
  }
}

TEST_CASE("autograd accumulate: one gradient handed to two inputs is not shared between them",
          "[autograd]") {
  // add's backward gives its output's gradient to both inputs; each input's
  // first contribution must be a copy, or a later one into a would show in b.
  const Tensor a = Tensor::randn({4, 3}, 51), b = Tensor::randn({4, 3}, 52);
  const Tensor s = Tensor::randn({4, 3}, 53), t = Tensor::randn({4, 3}, 54);
  autograd::Tape tape;
  tape.watch(a);
  tape.watch(b);
  const Tensor u = mul(a, t);  // recorded first: runs last, adding t into a
  const Tensor z = add(a, b);
  tape.backward(add(total(mul(z, s)), total(u)));  // da = s + t, db = s
  require_close(tape.grad(a), cast(add(s, t), DType::f64));
  require_close(tape.grad(b), cast(s, DType::f64));
}

TEST_CASE("autograd accumulate: slices of a fused last dim written in place, overlaps added",
          "[autograd]") {
  // A fused projection's output [M, 3n] read as q | k | v along its last dim
  // (as the models' fused QKV and gate_up): each slice's first gradient is
  // written straight in; a slice reached twice, or slices that overlap, add;
  // what no slice reaches is zero.
  const std::int64_t n = 64;
  const Tensor base = Tensor::randn({kM, 3 * n}, 61);
  const Tensor s1 = Tensor::randn({kM, n}, 62), s2 = Tensor::randn({kM, n}, 63),
               s3 = Tensor::randn({kM, 2 * n}, 64);
  const auto d64 = [](const Tensor& t) { return cast(t, DType::f64); };
  const auto cols = [&](const Tensor& t, std::int64_t from, std::int64_t len) {
    return t.narrow(1, from, len);
  };
  SECTION("q, k and v each once: the three slices cover the base") {
    poison(base);
    autograd::Tape tape;
    tape.watch(base);
    const Tensor loss = add(add(total(mul(cols(base, 0, n), s1)), total(mul(cols(base, n, n), s2))),
                            total(mul(cols(base, 2 * n, n), s1)));
    tape.backward(loss);
    const Tensor d = tape.grad(base);
    require_close(cols(d, 0, n), d64(s1));
    require_close(cols(d, n, n), d64(s2));
    require_close(cols(d, 2 * n, n), d64(s1));
  }
  SECTION("q and v only: k's columns are zero") {
    poison(base);
    autograd::Tape tape;
    tape.watch(base);
    tape.backward(add(total(mul(cols(base, 0, n), s1)), total(mul(cols(base, 2 * n, n), s2))));
    const Tensor d = tape.grad(base);
    require_close(cols(d, 0, n), d64(s1));
    require_close(cols(d, n, n), Tensor::zeros({kM, n}, DType::f64));
    require_close(cols(d, 2 * n, n), d64(s2));
  }
  SECTION("overlapping slices and a slice read twice add") {
    poison(base);
    autograd::Tape tape;
    tape.watch(base);
    // [0, 2n) with s3, [n, 2n) with s2, [n, 3n) with s3 again: the columns
    // [n, 2n) get s3's second half, s2 and s3's first half.
    const Tensor loss =
        add(add(total(mul(cols(base, 0, 2 * n), s3)), total(mul(cols(base, n, n), s2))),
            total(mul(cols(base, n, 2 * n), s3)));
    tape.backward(loss);
    const Tensor d = tape.grad(base);
    require_close(cols(d, 0, n), d64(cols(s3, 0, n)));
    require_close(cols(d, n, n), d64(add(add(cols(s3, n, n), s2), cols(s3, 0, n))));
    require_close(cols(d, 2 * n, n), d64(cols(s3, n, n)));
  }
}
