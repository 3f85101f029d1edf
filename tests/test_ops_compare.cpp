// Comparisons (gt ge lt le eq ne, their operators and scalar forms) and the
// compound assignments (+= -= *= /=) on the host backends: bool results
// against C++'s own comparisons of the same values, the scalar's rounding
// rule, NaN, broadcasting, bad input, and both under an autograd tape.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/autograd.hpp"
#include "strata/elementwise.hpp"
#include "strata/reduce.hpp"
#include "test_core_util.hpp"

using namespace strata;
using ops_test::on;

namespace {

const char* const kHostBackends[] = {"reference", "cpu"};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using CmpFn = Tensor (*)(const Tensor&, const Tensor&, const OpOptions&);
using CmpScalarFn = Tensor (*)(const Tensor&, double, const OpOptions&);
struct Comparison {
  const char* name;
  CmpFn fn;
  CmpScalarFn fn_s;
  bool (*want)(double, double);
};
const Comparison kComparisons[] = {
    {"gt", &gt, &gt, [](double x, double y) { return x > y; }},
    {"ge", &ge, &ge, [](double x, double y) { return x >= y; }},
    {"lt", &lt, &lt, [](double x, double y) { return x < y; }},
    {"le", &le, &le, [](double x, double y) { return x <= y; }},
    {"eq", &eq, &eq, [](double x, double y) { return x == y; }},
    {"ne", &ne, &ne, [](double x, double y) { return x != y; }},
};

Tensor total(const Tensor& t) {
  Tensor s = t;
  while (s.dim() > 0) s = sum(s, 0);
  return s;
}

void require_values(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (std::size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", want " << want[i]);
    REQUIRE(g[i] == want[i]);
  }
}

}  // namespace

TEST_CASE("compare: bool results of every comparison, broadcast, every dtype and NaN",
          "[ops][compare]") {
  // a [3, 1] against b [4]: every ordering of the values, ties included.
  const std::vector<double> av = {-1.0, 0.0, 2.0}, bv = {2.0, 0.0, -1.0, 0.5};
  for (const DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean}) {
    const Tensor a = Tensor::from_vector<double>(av, {3, 1}).to(dt);
    const Tensor b = Tensor::from_vector<double>(bv, {4}).to(dt);
    const std::vector<double> ra = a.to_vector<double>(), rb = b.to_vector<double>();
    for (const char* be : kHostBackends) {
      for (const Comparison& c : kComparisons) {
        INFO(dtype_name(dt) << " " << be << " " << c.name);
        const Tensor r = c.fn(a, b, on(be));
        REQUIRE(r.dtype() == DType::boolean);
        REQUIRE(r.shape() == Shape{3, 4});
        std::vector<double> want;
        for (double x : ra)
          for (double y : rb) want.push_back(c.want(x, y) ? 1.0 : 0.0);
        require_values(r, want);
        // The scalar form: 0.5 (exact in every floating dtype; integers compare in f64).
        want.clear();
        for (double x : ra) want.push_back(c.want(x, 0.5) ? 1.0 : 0.0);
        require_values(c.fn_s(a, 0.5, on(be)), want);
      }
    }
  }
  // NaN: every comparison false but ne, on either side.
  const Tensor n = Tensor::from_vector<double>({kNaN, 1.0}, {2});
  const Tensor one = Tensor::full({2}, 1.0, DType::f64);
  for (const char* be : kHostBackends) {
    for (const Comparison& c : kComparisons) {
      INFO(be << " " << c.name);
      const double nan_result = std::string(c.name) == "ne" ? 1.0 : 0.0;
      require_values(c.fn(n, one, on(be)), {nan_result, c.want(1, 1) ? 1.0 : 0.0});
      require_values(c.fn(one, n, on(be)), {nan_result, c.want(1, 1) ? 1.0 : 0.0});
      require_values(c.fn_s(n, kNaN, on(be)), {nan_result, nan_result});
    }
  }
}

TEST_CASE("compare: a scalar is rounded to a floating tensor's dtype, not an integer's",
          "[ops][compare]") {
  for (const char* be : kHostBackends) {
    INFO(be);
    // 0.1f != 0.1: on f32, x == 0.1 compares with 0.1f (as PyTorch); on f64 it does not.
    const Tensor x32 = Tensor::full({2}, 0.1, DType::f32);
    require_values(eq(x32, 0.1, on(be)), {1, 1});
    require_values(gt(x32, 0.1, on(be)), {0, 0});
    require_values(eq(x32.to(DType::f64), 0.1, on(be)), {0, 0});
    require_values(gt(x32.to(DType::f64), 0.1, on(be)), {1, 1});
    // f16: 0.1 rounds to 0.0999755859375.
    require_values(le(Tensor::full({1}, 0.0999755859375, DType::f16), 0.1, on(be)), {1});
    require_values(eq(Tensor::full({1}, 0.0999755859375, DType::f16), 0.1, on(be)), {1});
    // Integers compare with s itself: 2 >= 2.5 is false, 2 > 1.5 true.
    const Tensor i = Tensor::from_vector<std::int64_t>({2, 3}, {2});
    require_values(ge(i, 2.5, on(be)), {0, 1});
    require_values(gt(i, 1.5, on(be)), {1, 1});
    require_values(eq(i.to(DType::i32), 2.0, on(be)), {1, 0});
  }
  // Two i64 tensors beyond 2^53: the cpu kernel compares them exactly (the
  // reference reads every value as f64).
  const std::int64_t big = (std::int64_t(1) << 60) + 1;
  const Tensor p = Tensor::from_vector<std::int64_t>({big}, {1});
  const Tensor q = Tensor::from_vector<std::int64_t>({big - 1}, {1});
  require_values(gt(p, q, on("cpu")), {1});
}

TEST_CASE("compare: operators, both operand orders, and strided views", "[ops][compare]") {
  const Tensor base = Tensor::randn({6, 5}, 3);
  const Tensor a = base.transpose(0, 1).flip(0);  // [5, 6], negative and non-unit strides
  const Tensor b = Tensor::randn({6}, 4);
  const auto same = [](const Tensor& x, const Tensor& y) {
    REQUIRE(x.dtype() == DType::boolean);
    require_values(x, y.to_vector<double>());
  };
  same(a > b, gt(a, b));
  same(a >= b, ge(a, b));
  same(a < b, lt(a, b));
  same(a <= b, le(a, b));
  same(a == a, Tensor::full({5, 6}, 1.0, DType::boolean));
  same(a != a, Tensor::zeros({5, 6}, DType::boolean));
  same(a > 0.25, gt(a, 0.25));
  same(0.25 < a, gt(a, 0.25));
  same(0.25 >= a, le(a, 0.25));
  same(0.25 == a, eq(a, 0.25));
  same(a != 0.25, ne(a, 0.25));
  // Against the element-by-element C++ comparison of the strided view.
  const Tensor r = gt(a, b, on("cpu"));
  for (const auto& idx : core_test::all_indices(a.shape()))
    REQUIRE((r.item(idx) != 0) == (a.item(idx) > b.item({idx[1]})));
  // gt_out into a strided bool view; the gaps stay as they were.
  const Tensor buf = Tensor::full({5, 12}, 1.0, DType::boolean);
  gt_out(buf.slice(1, 0, 12, 2), a, 100.0);
  for (std::int64_t j = 0; j < 12; ++j) REQUIRE(buf.item({2, j}) == (j % 2 ? 1.0 : 0.0));
}

TEST_CASE("compare: bad input is an error and leaves the output untouched", "[ops][compare]") {
  const Tensor a = Tensor::randn({3, 4}, 1);
  const Tensor out = Tensor::full({3, 4}, 1.0, DType::boolean);
  auto untouched = [&] {
    for (double v : out.to_vector<double>()) REQUIRE(v == 1.0);
  };
  CORE_REQUIRE_ERROR(gt_out(out, a, a.to(DType::f64)), "gt: b has dtype f64 but a has f32");
  untouched();
  CORE_REQUIRE_ERROR(le_out(out, a, Tensor::randn({5}, 2)), "le: b has shape [5]",
                     "does not broadcast with a's [3, 4]");
  untouched();
  CORE_REQUIRE_ERROR(eq_out(Tensor::zeros({3, 4}), a, a), "eq: out has dtype f32 but must be bool");
  CORE_REQUIRE_ERROR(ne_out(out, a, 0.5, on("tpu")), "ne_scalar: unknown backend 'tpu'");
  untouched();
  CORE_REQUIRE_ERROR(lt_out(out.narrow(0, 0, 2), a, 0.5), "lt_scalar: out has shape [2, 4]",
                     "must be [3, 4]");
  CORE_REQUIRE_ERROR(ge(a, Tensor()), "ge: b is an undefined tensor");
}

TEST_CASE("compare: under a tape the inputs get no gradient through a comparison",
          "[ops][compare][autograd]") {
  const Tensor x = Tensor::from_vector<double>({-1.5, 0.5, 2.0, -0.25}, {4});
  autograd::Tape tape;
  tape.watch(x);
  const Tensor mask = gt(x, 0.0);  // nothing recorded, no error
  const Tensor bools = Tensor::zeros({4}, DType::boolean);
  le_out(bools, x, x);  // the _out form too
  // x * mask: the gradient is the mask, through the multiplication only.
  tape.backward(total(mul(x, cast(mask, DType::f64))));
  require_values(tape.grad(x), {0, 1, 1, 0});
  require_values(bools, {1, 1, 1, 1});
}

// ---- compound assignment -------------------------------------------------------------

TEST_CASE("compound assignment writes into the view's memory, and only there", "[ops][compound]") {
  const Tensor base = Tensor::arange(24, DType::f64).reshape({4, 6});
  const Tensor before = base.clone();
  const Tensor view = base.narrow(1, 2, 3).narrow(0, 1, 2);         // rows 1-2, columns 2-4
  const Tensor b = Tensor::from_vector<double>({10, 20, 30}, {3});  // broadcast over rows
  view += b;
  view -= 1.0;
  view *= 2.0;
  view /= Tensor::full({2, 3}, 4.0, DType::f64);
  view += 0.5;
  view *= Tensor::full({1, 1}, 3.0, DType::f64);
  view -= Tensor::full({3}, 1.5, DType::f64);
  view /= 0.5;
  for (const auto& idx : core_test::all_indices(base.shape())) {
    const double x = before.item(idx);
    const bool in = idx[0] >= 1 && idx[0] <= 2 && idx[1] >= 2 && idx[1] <= 4;
    const double bj = in ? 10.0 * static_cast<double>(idx[1] - 1) : 0;
    const double want = in ? (((x + bj - 1) * 2 / 4 + 0.5) * 3 - 1.5) / 0.5 : x;
    INFO("index " << shape_str(idx));
    REQUIRE(base.item(idx) == want);
  }
  // The result is the same view (chaining writes through it again).
  const Tensor t = Tensor::zeros({2}, DType::f64);
  (t += 1.0) += 2.0;
  require_values(t, {3, 3});
  // A transposed view of an f32 buffer; b may not grow a's shape.
  const Tensor m = Tensor::zeros({3, 2});
  m.transpose(0, 1) += Tensor::from_vector<float>({1, 2, 3}, {3});
  require_values(m, {1, 1, 2, 2, 3, 3});
  CORE_REQUIRE_ERROR(m += Tensor::zeros({4, 3, 2}), "add: out has shape [3, 2]",
                     "must be [4, 3, 2]");
}

TEST_CASE("compound assignment under a tape: accumulation works, the documented refusals",
          "[ops][compound][autograd]") {
  const Tensor x = Tensor::from_vector<double>({1.0, -2.0, 3.0}, {3});
  const Tensor w = Tensor::from_vector<double>({0.5, 4.0, -1.0}, {3});
  {
    autograd::Tape tape;
    tape.watch(x);
    const Tensor acc = Tensor::zeros({3}, DType::f64);  // not watched: a running sum
    acc += mul(x, w);
    acc += x;
    acc *= 2.0;  // a scalar *= reads nothing it overwrites
    acc -= 1.0;
    tape.backward(total(acc));  // d/dx = 2 (w + 1)
    require_values(tape.grad(x), {3.0, 10.0, 0.0});
  }
  {
    autograd::Tape tape;
    tape.watch(x);
    const Tensor acc = mul(x, w);
    // mul's backward reads the a it would overwrite: refused before writing.
    const std::vector<double> kept = acc.to_vector<double>();
    CORE_REQUIRE_ERROR(acc *= x, "mul: out overwrites a, which the backward reads");
    CORE_REQUIRE_ERROR(acc /= w, "div: out overwrites a, which the backward reads");
    require_values(acc, kept);
    // A watched tensor is not written while the tape records.
    CORE_REQUIRE_ERROR(x += 1.0, "add_scalar", "watched");
    require_values(x, {1.0, -2.0, 3.0});
  }
}
