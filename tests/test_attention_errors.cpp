// Every malformed softmax_attention call throws strata::Error naming the op,
// the argument and the bad value, before anything is written: each test
// also checks that the caller's out (and lse) still hold their old values.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/attention.hpp"
#include "test_core_util.hpp"  // core_test::DeviceScope: a second device on any machine

using namespace strata;

namespace {

constexpr double kOld = 7.25;  // what out and lse hold before each call

// A valid call (GQA, batch 2, Hq 4, Hkv 2, M 5, N 7, d 8, dv 6) that each
// test breaks in one way.
struct Call {
  Tensor q = Tensor::randn({2, 4, 5, 8}, 1);
  Tensor k = Tensor::randn({2, 2, 7, 8}, 2);
  Tensor v = Tensor::randn({2, 2, 7, 6}, 3);
  Tensor out = Tensor::full({2, 4, 5, 6}, kOld);
  Tensor lse = Tensor::full({2, 4, 5}, kOld);
  AttentionOptions opt;

  void run() const { softmax_attention_out(out, q, k, v, opt, lse); }

  // Runs `f`, requires a strata::Error containing "softmax_attention" and
  // every part, and requires out and lse untouched.
  void expect_error(const std::vector<std::string>& parts,
                    const std::function<void()>& f = nullptr) const {
    std::string msg = "<no error>";
    try {
      f ? f() : run();
    } catch (const Error& e) {
      msg = e.what();
    }
    INFO("message: " << msg);
    REQUIRE(msg != "<no error>");
    CHECK(msg.rfind("softmax_attention: ", 0) == 0);
    for (const std::string& p : parts) {
      INFO("expected part: " << p);
      CHECK(msg.find(p) != std::string::npos);
    }
    for (const Tensor* t : {&out, &lse}) {
      if (!t->defined()) continue;
      for (double x : t->to_vector<double>()) REQUIRE(x == kOld);
    }
  }
};

}  // namespace

TEST_CASE("attention error: the valid base call works", "[attention][errors]") {
  Call c;
  c.run();
  for (double x : c.out.to_vector<double>()) CHECK(std::isfinite(x));
  for (double x : c.out.to_vector<double>()) CHECK(x != kOld);
}

TEST_CASE("attention error: undefined q, k, v, out", "[attention][errors]") {
  {
    Call c;
    c.q = Tensor();
    c.expect_error({"q is an undefined tensor"});
  }
  {
    Call c;
    c.v = Tensor();
    c.expect_error({"v is an undefined tensor"});
  }
  {
    Call c;
    c.expect_error({"out is an undefined tensor"},
                   [&] { softmax_attention_out(Tensor(), c.q, c.k, c.v, c.opt, c.lse); });
  }
}

// Calls with q, k or v of a shape that does not fit the others: the shapes
// that replace the base call's (an empty one keeps it), the same seeds.
TEST_CASE("attention error: shapes of q, k and v that do not fit", "[attention][errors]") {
  struct Bad {
    const char* what;
    Shape q, k, v;
    std::vector<std::string> parts;
  };
  const std::vector<Bad> bad = {
      {"rank below 2", {8}, {}, {}, {"q must have 2 to 8 dims", "has 1", "[8]"}},
      {"rank below 2 for v", {}, {}, {6}, {"v must have 2 to 8 dims", "has 1"}},
      {"d of q and k differ", {}, {2, 2, 7, 9}, {}, {"q has head size d = 8 but k has 9"}},
      {"k and v key counts differ", {}, {}, {2, 2, 6, 6}, {"k has 7 keys but v has 6"}},
      {"k and v head counts differ", {}, {}, {2, 1, 7, 6}, {"k has 2 heads but v has 1"}},
      {"Hq not a multiple of Hkv",
       {},
       {2, 3, 7, 8},
       {2, 3, 7, 6},
       {"q has 4 heads, not a multiple of k's 3 heads"}},
      {"zero kv heads", {}, {2, 0, 7, 8}, {2, 0, 7, 6}, {"k has 0 heads but q has 4"}},
      {"head size 0", {2, 4, 5, 0}, {2, 2, 7, 0}, {}, {"q has head size d = 0"}},
      {"batch dims that do not broadcast",
       {},
       {3, 2, 7, 8},
       {3, 2, 7, 6},
       {"batch dims of q [2] and k [3] do not broadcast"}},
  };
  for (const Bad& b : bad) {
    DYNAMIC_SECTION(b.what) {
      Call c;
      if (!b.q.empty()) c.q = Tensor::randn(b.q, 1);
      if (!b.k.empty()) c.k = Tensor::randn(b.k, 2);
      if (!b.v.empty()) c.v = Tensor::randn(b.v, 3);
      c.expect_error(b.parts);
    }
  }
}

TEST_CASE("attention error: dtype of k differs from q", "[attention][errors]") {
  Call c;
  c.k = Tensor::randn({2, 2, 7, 8}, 2, DType::f64);
  c.expect_error({"k has dtype f64 but q has f32"});
}

TEST_CASE("attention error: an f32 out for f16 and bf16 inputs", "[attention][errors]") {
  for (const DType dt : {DType::f16, DType::bf16}) {
    Call c;
    c.q = Tensor::randn({2, 4, 5, 8}, 1, dt);
    c.k = Tensor::randn({2, 2, 7, 8}, 2, dt);
    c.v = Tensor::randn({2, 2, 7, 6}, 3, dt);
    c.expect_error({"out has dtype f32 but must be " + std::string(dtype_name(dt))});
  }
}

TEST_CASE("attention error: bool q", "[attention][errors]") {
  Call c;
  c.q = Tensor::empty({2, 4, 5, 8}, DType::boolean);
  c.expect_error({"q has dtype bool but must be f32, f64, f16 or bf16"});
}

TEST_CASE("attention error: mask dtype neither bool nor q's dtype", "[attention][errors]") {
  Call c;
  c.opt.mask = Tensor::randn({5, 7}, 4, DType::f64);
  c.expect_error({"mask has dtype f64 but must be bool or q's dtype f32"});
}

TEST_CASE("attention error: mask shape does not broadcast", "[attention][errors]") {
  Call c;
  c.opt.mask = Tensor::randn({5, 8}, 4);
  c.expect_error({"mask has shape [5, 8] which does not broadcast to [2, 4, 5, 7]"});
}

TEST_CASE("attention error: mask with more dims than [..., Hq, M, N]", "[attention][errors]") {
  Call c;
  c.opt.mask = Tensor::randn({3, 2, 4, 5, 7}, 4);
  c.expect_error({"mask has shape [3, 2, 4, 5, 7] which does not broadcast"});
}

TEST_CASE("attention error: non-finite scale", "[attention][errors]") {
  for (const double s :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Call c;
    c.opt.scale = s;
    c.expect_error({"scale is ", "but must be finite"});
  }
}

TEST_CASE("attention error: negative window", "[attention][errors]") {
  {
    Call c;
    c.opt.window = std::pair<std::int64_t, std::int64_t>{-2, 0};
    c.expect_error({"window left is -2"});
  }
  {
    Call c;
    c.opt.window = std::pair<std::int64_t, std::int64_t>{3, -7};
    c.expect_error({"window right is -7"});
  }
}

TEST_CASE("attention error: out of the wrong shape", "[attention][errors]") {
  Call c;
  c.out = Tensor::full({2, 4, 5, 7}, kOld);
  c.expect_error({"out has shape [2, 4, 5, 7] but must be [2, 4, 5, 6]"});
}

TEST_CASE("attention error: out of the wrong dtype", "[attention][errors]") {
  Call c;
  c.out = Tensor::full({2, 4, 5, 6}, kOld, DType::f64);
  c.expect_error({"out has dtype f64 but must be f32"});
}

TEST_CASE("attention error: out whose elements share memory", "[attention][errors]") {
  Call c;
  c.out = Tensor::full({2, 4, 5, 1}, kOld).expand({2, 4, 5, 6});
  c.expect_error({"out has strides", "share memory"});
}

TEST_CASE("attention error: lse of the wrong shape or dtype", "[attention][errors]") {
  {
    Call c;
    c.lse = Tensor::full({2, 4, 6}, kOld);
    c.expect_error({"lse has shape [2, 4, 6] but must be [2, 4, 5]"});
  }
  {
    Call c;
    c.lse = Tensor::full({2, 4, 5}, kOld, DType::f64);
    c.expect_error({"lse has dtype f64 but must be f32"});
  }
}

TEST_CASE("attention error: out overlapping q", "[attention][errors]") {
  Call c;
  c.q = Tensor::full({2, 4, 5, 8}, kOld);  // out is a view into q: q must stay as it was
  c.out = c.q.narrow(3, 1, 6);
  c.expect_error({"out overlaps input q"});
}

TEST_CASE("attention error: out overlapping k, v or the mask", "[attention][errors]") {
  {
    // k [2, 2, 7, 8] holds 224 floats; out [2, 4, 5, 6] needs 240: give k a
    // bigger buffer and let out cover its tail.
    Call c;
    const Tensor buf = Tensor::full({300}, kOld);
    c.k = buf.as_strided({2, 2, 7, 8}, {112, 56, 8, 1}, 0);
    c.out = buf.as_strided({2, 4, 5, 6}, {120, 30, 6, 1}, 60);
    c.expect_error({"out overlaps input k"});
  }
  {
    Call c;
    const Tensor buf = Tensor::full({300}, kOld);
    c.v = buf.as_strided({2, 2, 7, 6}, {84, 42, 6, 1}, 0);
    c.out = buf.as_strided({2, 4, 5, 6}, {120, 30, 6, 1}, 20);
    c.expect_error({"out overlaps input v"});
  }
  {
    Call c;
    const Tensor buf = Tensor::full({300}, kOld);
    c.opt.mask = buf.as_strided({5, 7}, {7, 1}, 0);
    c.out = buf.as_strided({2, 4, 5, 6}, {120, 30, 6, 1}, 30);
    c.expect_error({"out overlaps input mask"});
  }
}

TEST_CASE("attention error: lse overlapping an input or out", "[attention][errors]") {
  {
    Call c;
    c.v = Tensor::full({2, 2, 7, 6}, kOld);
    c.lse = c.v.as_strided({2, 4, 5}, {20, 5, 1}, 0);
    c.expect_error({"lse overlaps input v"});
  }
  {
    Call c;
    const Tensor buf = Tensor::full({2, 4, 5, 7}, kOld);
    c.out = buf.narrow(3, 0, 6);
    c.lse = buf.select(3, 6);
    c.expect_error({"out and lse overlap"});
  }
}

TEST_CASE("attention error: unknown backend", "[attention][errors]") {
  Call c;
  c.opt.backend = "tpu";
  c.expect_error({"unknown backend 'tpu'", "reference"});
}

TEST_CASE("attention error: cuda backend with host tensors", "[attention][errors]") {
  // Not built, not available, or (on the GPU machine) the wrong device: each
  // is reported naming the backend.
  Call c;
  c.opt.backend = "cuda";
  c.expect_error({"backend 'cuda'"});
}

TEST_CASE("attention error: inputs and outputs on different devices", "[attention][errors]") {
  core_test::DeviceScope scope;
  REQUIRE(scope.device);  // a real GPU, or the fake runtime standing in for one
  const Device other = *scope.device;
  {
    Call c;
    c.k = c.k.to(other);
    c.expect_error({"k is on " + other.str() + " but q is on cpu"});
  }
  {
    Call c;
    c.opt.mask = Tensor::full({5, 7}, 1.0).to(other);
    c.expect_error({"mask is on " + other.str() + " but q is on cpu"});
  }
  {
    Call c;
    const Tensor out_other = Tensor::full({2, 4, 5, 6}, kOld).to(other);
    c.expect_error({"out is on " + other.str() + " but q is on cpu"},
                   [&] { softmax_attention_out(out_other, c.q, c.k, c.v, c.opt, c.lse); });
    for (double x : out_other.to_vector<double>()) CHECK(x == kOld);
  }
}

TEST_CASE("attention error: the allocating front ends validate the same way",
          "[attention][errors]") {
  Call c;
  c.v = Tensor::randn({2, 2, 6, 6}, 3);
  c.expect_error({"k has 7 keys but v has 6"}, [&] { (void)softmax_attention(c.q, c.k, c.v); });
  c.expect_error({"k has 7 keys but v has 6"}, [&] { (void)softmax_attention_lse(c.q, c.k, c.v); });
  c.expect_error({"k has 7 keys but v has 6"},
                 [&] { (void)softmax_attention_kernel(c.q, c.k, c.v); });
}
