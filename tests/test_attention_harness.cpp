// The harness must be able to fail: deliberately broken "kernels" (extra
// runners) are each caught by the check meant for them, and a correct one
// passes, including one that is off by a rounding error.
#include <limits>
#include <string>

#include "catch.hpp"
#include "strata/harness.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

AttentionCase small_case(Layout layout, DType dt) {
  AttentionCase c = batched_case(9, 9, 8, 8, dt, 5);
  c.Hq = 4;
  c.layout = layout;
  c.mask = MaskKind::bool_bcast;
  return c;
}

// The correct computation, through the reference backend.
void correct(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
             AttentionOptions opt, const Tensor& lse) {
  opt.backend = "reference";
  softmax_attention_out(out, q, k, v, opt, lse);
}

const BackendResult& extra_result(const CaseReport& rep) {
  REQUIRE(!rep.results.empty());
  REQUIRE(rep.results.back().backend == "extra");
  return rep.results.back();
}

}  // namespace

TEST_CASE("harness: a correct extra runner passes on every layout", "[attention][harness]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    for (const Layout l : all_layouts()) {
      const AttentionCase c = small_case(l, dt);
      const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), correct}});
      INFO(rep.summary());
      CHECK(rep.all_pass());
      CHECK(extra_result(rep).pass);
    }
  }
}

TEST_CASE("harness: one-ulp differences pass", "[attention][harness]") {
  for (const DType dt : {DType::f32, DType::f64}) {
    const AttentionCase c = small_case(Layout::sliced, dt);
    auto nudged = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                     const AttentionOptions& opt, const Tensor& lse) {
      correct(out, q, k, v, opt, lse);
      const double x = out.item({1, 2, 3, 4});
      const double ulp = out.dtype() == DType::f32 ? 1.2e-7 : 2.3e-16;
      out.set_item({1, 2, 3, 4}, x * (1 + ulp));
    };
    const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), nudged}});
    INFO(rep.summary());
    CHECK(extra_result(rep).pass);
  }
}

TEST_CASE("harness: one-ulp differences pass where the naive computation is exact",
          "[attention][harness]") {
  // N = 1: the output is v itself, which a naive computation in any dtype
  // reproduces exactly, so only the tolerance floor admits rounding. A
  // result one ulp of its own dtype away must still pass (f16/bf16 once got
  // f64's floor, 1e-12, and failed), and an error of 5% must not.
  for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    AttentionCase c = small_case(Layout::contiguous, dt);
    c.N = 1;
    c.mask = MaskKind::none;
    auto nudged = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                     const AttentionOptions& opt, const Tensor& lse) {
      correct(out, q, k, v, opt, lse);
      // The next representable value away from zero: the bit pattern + 1.
      char* p = static_cast<char*>(out.data_ptr());
      for (int d = 0; d < out.dim(); ++d)
        p += (d + 1) * out.stride(d) * static_cast<std::int64_t>(itemsize(out.dtype()));
      if (itemsize(out.dtype()) == 2) ++*reinterpret_cast<std::uint16_t*>(p);
      if (itemsize(out.dtype()) == 4) ++*reinterpret_cast<std::uint32_t*>(p);
      if (itemsize(out.dtype()) == 8) ++*reinterpret_cast<std::uint64_t*>(p);
    };
    const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), nudged}});
    INFO(rep.summary());
    CHECK(rep.naive_max_abs == 0);
    const BackendResult& r = extra_result(rep);
    CHECK(r.max_abs_err > 0);  // the nudge is seen
    CHECK(r.pass);

    auto off = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                  const AttentionOptions& opt, const Tensor& lse) {
      correct(out, q, k, v, opt, lse);
      out.set_item({1, 2, 3, 4}, out.item({1, 2, 3, 4}) * 1.05 + 0.05);
    };
    const CaseReport bad = run_attention_case(c, {{"extra", Device::cpu(), off}});
    INFO(bad.summary());
    CHECK_FALSE(extra_result(bad).pass);
  }
}

TEST_CASE("harness: a wrong value fails on the error bound", "[attention][harness]") {
  const AttentionCase c = small_case(Layout::transposed, DType::f32);
  auto wrong = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                  const AttentionOptions& opt, const Tensor& lse) {
    correct(out, q, k, v, opt, lse);
    out.set_item({1, 3, 8, 7}, out.item({1, 3, 8, 7}) + 1e-4);
  };
  const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), wrong}});
  const BackendResult& r = extra_result(rep);
  INFO(r.summary());
  CHECK_FALSE(r.pass);
  CHECK(r.max_abs_err > r.tol_abs);
  CHECK(r.guard_intact);
  CHECK(r.fully_written);
}

TEST_CASE("harness: a wrong lse fails", "[attention][harness]") {
  const AttentionCase c = small_case(Layout::negative, DType::f64);
  auto wrong = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                  const AttentionOptions& opt, const Tensor& lse) {
    correct(out, q, k, v, opt, lse);
    lse.set_item({0, 0, 0}, lse.item({0, 0, 0}) + 1e-9);
  };
  const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), wrong}});
  const BackendResult& r = extra_result(rep);
  INFO(r.summary());
  CHECK_FALSE(r.pass);
  CHECK(r.lse_max_abs_err > r.tol_lse);
}

TEST_CASE("harness: NaN where the reference is finite fails", "[attention][harness]") {
  const AttentionCase c = small_case(Layout::contiguous, DType::f32);
  auto nan = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                const AttentionOptions& opt, const Tensor& lse) {
    correct(out, q, k, v, opt, lse);
    out.set_item({0, 1, 2, 3}, std::numeric_limits<double>::quiet_NaN());
  };
  const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), nan}});
  const BackendResult& r = extra_result(rep);
  INFO(r.summary());
  CHECK_FALSE(r.pass);
  CHECK(r.nan_mismatch == 1);
}

TEST_CASE("harness: an element left unwritten fails", "[attention][harness]") {
  for (const Layout l : all_layouts()) {
    const AttentionCase c = small_case(l, DType::f32);
    auto skip_last_row = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                            const AttentionOptions& opt, const Tensor& lse) {
      AttentionOptions o = opt;
      o.backend = "reference";
      const AttentionResult r = softmax_attention_lse(q, k, v, o);
      const std::int64_t M = out.size(-2);
      out.narrow(-2, 0, M - 1).copy_from(r.out.narrow(-2, 0, M - 1));
      lse.copy_from(r.lse);
    };
    const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), skip_last_row}});
    const BackendResult& r = extra_result(rep);
    INFO(layout_name(l) << ": " << r.summary());
    CHECK_FALSE(r.pass);
    CHECK_FALSE(r.fully_written);
    CHECK(r.guard_intact);
  }
}

TEST_CASE("harness: a write outside the output view fails on the guard", "[attention][harness]") {
  for (const Layout l : all_layouts()) {
    const AttentionCase c = small_case(l, DType::f64);
    // One element just before the lowest address of the view: in the guard.
    auto stray = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                    const AttentionOptions& opt, const Tensor& lse) {
      correct(out, q, k, v, opt, lse);
      const std::int64_t lo = out.byte_extent().first / 8;
      out.as_strided({1}, {1}, lo - 1).fill(0.5);
    };
    const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), stray}});
    const BackendResult& r = extra_result(rep);
    INFO(layout_name(l) << ": " << r.summary());
    CHECK_FALSE(r.pass);
    CHECK_FALSE(r.guard_intact);
  }
  {
    // A write into a gap between the elements of a strided view.
    const AttentionCase c = small_case(Layout::strided_cols, DType::f32);
    auto gap = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                  const AttentionOptions& opt, const Tensor& lse) {
      correct(out, q, k, v, opt, lse);
      out.as_strided({1}, {1}, out.offset() + 1).fill(0.5);
    };
    const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), gap}});
    const BackendResult& r = extra_result(rep);
    INFO(r.summary());
    CHECK_FALSE(r.guard_intact);
  }
}

TEST_CASE("harness: a read outside an input view shows up as NaN", "[attention][harness]") {
  // The sliced layout's padding holds NaN: a kernel that read the column
  // after each row of k would see it.
  const AttentionCase c = small_case(Layout::sliced, DType::f32);
  auto overread = [](const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                     const AttentionOptions& opt, const Tensor& lse) {
    const Tensor k_shifted = k.as_strided(k.shape(), k.strides(), k.offset() + 1);
    correct(out, q, k_shifted, v, opt, lse);
  };
  const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), overread}});
  const BackendResult& r = extra_result(rep);
  INFO(r.summary());
  CHECK_FALSE(r.pass);
  CHECK(r.nan_mismatch > 0);
}

TEST_CASE("harness: an exception is reported as a failure with its message",
          "[attention][harness]") {
  const AttentionCase c = small_case(Layout::contiguous, DType::f32);
  auto throws = [](const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                   const AttentionOptions&, const Tensor&) { fail("broken_kernel", "boom"); };
  const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), throws}});
  const BackendResult& r = extra_result(rep);
  CHECK_FALSE(r.pass);
  CHECK(r.error == "broken_kernel: boom");
}

TEST_CASE("harness: case inputs follow the requested layout", "[attention][harness]") {
  AttentionCase c = small_case(Layout::contiguous, DType::f32);
  c.mask = MaskKind::float_bcast;
  const AttentionInputs contiguous = make_attention_inputs(c);
  CHECK(contiguous.q.is_contiguous());
  CHECK(contiguous.mask.stride(0) == 0);  // [Hq, M, N] with a zero head stride
  CHECK(contiguous.mask.stride(-1) == 2);
  c.layout = Layout::transposed;
  CHECK(make_attention_inputs(c).k.stride(-2) == 1);
  c.layout = Layout::sliced;
  CHECK(make_attention_inputs(c).v.offset() > 0);
  c.layout = Layout::fused_qkv;
  const AttentionInputs fused = make_attention_inputs(c);
  CHECK(fused.q.storage() == fused.k.storage());
  CHECK(fused.k.storage() == fused.v.storage());
  CHECK(fused.q.stride(-2) == (4 + 2 * 2) * 8);
  c.layout = Layout::strided_cols;
  CHECK(make_attention_inputs(c).q.stride(-1) == 2);
  c.layout = Layout::broadcast;
  const AttentionInputs bc = make_attention_inputs(c);
  CHECK(bc.k.stride(0) == 0);
  CHECK(bc.v.dim() == 3);  // batch dims left to the front end's broadcasting
  c.layout = Layout::negative;
  const AttentionInputs neg = make_attention_inputs(c);
  CHECK(neg.k.stride(-2) < 0);
  CHECK(neg.q.stride(-1) < 0);
}

TEST_CASE("harness: f16 and bf16 outputs are poisoned and guarded in their own item size",
          "[attention][harness]") {
  // The harness once wrote 8-byte poison at every element of a non-f32
  // output, overrunning f16/bf16 buffers and clobbering their guards.
  for (const DType dt : {DType::f16, DType::bf16}) {
    for (const Layout l : {Layout::contiguous, Layout::strided_cols, Layout::negative}) {
      const AttentionCase c = small_case(l, dt);
      const CaseReport rep = run_attention_case(c, {{"extra", Device::cpu(), correct}});
      INFO(rep.summary());
      for (const BackendResult& r : rep.results) {
        INFO(r.summary());
        CHECK(r.error.empty());
        CHECK(r.guard_intact);
        CHECK(r.fully_written);
      }
    }
  }
}
