// The generic op runner (strata/op_harness.hpp): every op's descriptor on
// every available backend (reference and cpu here; cuda on the GPU machine)
// against the reference in f64, and the runner's own checks: a correct
// extra kernel passes, a broken one is caught by the check meant for it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/op_harness.hpp"
#include "strata/reduce.hpp"
#include "strata/registry.hpp"

using namespace strata;
using namespace strata::harness;

namespace {

const OpDescriptor& descriptor(const std::string& name) {
  const std::vector<OpDescriptor>& all = op_catalog();
  const auto it =
      std::find_if(all.begin(), all.end(), [&](const OpDescriptor& d) { return d.name == name; });
  REQUIRE(it != all.end());
  return *it;
}

// Runs every descriptor of a family. Every op has kernels on every backend
// now (the gates for ops and backends without kernels went once they all
// landed): an op with no kernel on an available backend, or a misspelt
// registry name in a descriptor, fails, naming it.
void check_family(const std::string& family) {
  int n = 0;
  std::uint64_t seed = std::hash<std::string>{}(family) % 1000;
  for (const OpDescriptor& d : op_catalog()) {
    if (d.family != family) continue;
    ++n;
    for (const OpCaseReport& rep : run_op(d, ++seed)) {
      if (!rep.checked()) {
        FAIL_CHECK("no kernel registered: " << rep.summary());
        continue;
      }
      INFO(rep.summary());
      CHECK(rep.error.empty());
      for (const OpBackendResult& r : rep.results) {
        if (!r.checked) {
          FAIL_CHECK(d.name << " not checked on " << r.backend << ": " << r.skip_reason);
          continue;
        }
        INFO(r.summary());
        CHECK(r.pass);
      }
    }
  }
  CHECK(n > 0);
}

// The correct computation: the descriptor's own call on the reference backend.
OpRunFn correct(const OpDescriptor& d) {
  return [&d](const Tensor& out, const std::vector<Tensor>& in, const OpOptions&) {
    OpOptions o;
    o.backend = "reference";
    d.run(out, in, o);
  };
}

const OpBackendResult& extra_result(const OpCaseReport& rep) {
  REQUIRE(rep.error.empty());
  REQUIRE(!rep.results.empty());
  REQUIRE(rep.results.back().backend == "extra");
  return rep.results.back();
}

// Every element's coordinates of a shape, row-major.
std::vector<std::vector<std::int64_t>> coords(const Shape& shape) {
  std::vector<std::vector<std::int64_t>> all;
  const std::int64_t n = shape_numel(shape);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::int64_t> c(shape.size());
    std::int64_t r = i;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      c[d] = r % shape[d];
      r /= shape[d];
    }
    all.push_back(c);
  }
  return all;
}

}  // namespace

// ---- every op --------------------------------------------------------------------

TEST_CASE("ops runner: binary ops, same shape and broadcasting", "[ops][runner]") {
  check_family("binary");
}
TEST_CASE("ops runner: scalar forms", "[ops][runner]") { check_family("scalar"); }
TEST_CASE("ops runner: unary ops", "[ops][runner]") { check_family("unary"); }
TEST_CASE("ops runner: the activations' backward", "[ops][runner]") {
  check_family("activation backward");
}
TEST_CASE("ops runner: comparisons, bool out, every dtype", "[ops][runner]") {
  check_family("compare");
}
TEST_CASE("ops runner: where", "[ops][runner]") { check_family("where"); }
TEST_CASE("ops runner: cast and copy_ between dtypes", "[ops][runner]") { check_family("cast"); }
TEST_CASE("ops runner: fill_", "[ops][runner]") { check_family("fill"); }
TEST_CASE("ops runner: sum, mean, max, argmax", "[ops][runner]") { check_family("reduce"); }
TEST_CASE("ops runner: softmax, log_softmax", "[ops][runner]") { check_family("softmax"); }
TEST_CASE("ops runner: layer_norm, rms_norm", "[ops][runner]") { check_family("norm"); }
TEST_CASE("ops runner: the softmax and norm backward kernels", "[ops][runner]") {
  check_family("row backward");
}
TEST_CASE("ops runner: embedding", "[ops][runner]") { check_family("embedding"); }
TEST_CASE("ops runner: index_copy_", "[ops][runner]") { check_family("index_copy"); }
TEST_CASE("ops runner: rotary", "[ops][runner]") { check_family("rotary"); }
TEST_CASE("ops runner: concat", "[ops][runner]") { check_family("concat"); }
TEST_CASE("ops runner: cross_entropy and its backward", "[ops][runner]") {
  check_family("cross_entropy");
  check_family("cross_entropy backward");
}
TEST_CASE("ops runner: matmul, linear", "[ops][runner]") { check_family("matmul"); }
TEST_CASE("ops runner: long rows", "[ops][runner]") { check_family("long rows"); }
TEST_CASE("ops runner: tril and triu", "[ops][runner]") { check_family("tri"); }
TEST_CASE("ops runner: dropout", "[ops][runner]") { check_family("dropout"); }
TEST_CASE("ops runner: topk", "[ops][runner]") { check_family("topk"); }

TEST_CASE("ops runner: every op has kernels on every available backend", "[ops][runner]") {
  // The runner reports an op without kernels as not checked rather than
  // running it; since every op has landed on every backend, that is a failure.
  std::set<std::string> unlanded;
  std::map<std::string, std::set<std::string>> partial;  // backend -> ops without a kernel
  for (const OpDescriptor& d : op_catalog()) {
    for (const std::string& op : unlanded_registry_ops(d)) unlanded.insert(op);
    for (const BackendInfo& b : Registry::get().backends()) {
      if (!b.compiled || !b.available) continue;
      for (const std::string& op : d.registry_ops) {
        const std::vector<KernelInfo> ks = Registry::get().kernels(op);
        if (std::none_of(ks.begin(), ks.end(),
                         [&](const KernelInfo& k) { return k.backend == b.name; }))
          partial[b.name].insert(op);
      }
    }
  }
  std::string list;
  for (const std::string& s : unlanded) list += " " + s;
  INFO("ops with no kernel on any backend:" << list);
  CHECK(unlanded.empty());
  for (const auto& [backend, ops] : partial) {
    std::string l;
    for (const std::string& s : ops) l += " " + s;
    FAIL_CHECK("ops with no kernel on " << backend << ":" << l);
  }
}

// ---- the building blocks -------------------------------------------------------------

TEST_CASE("guarded output: poison and sentinel in the dtype's own item size",
          "[ops][runner][harness]") {
  // The attention harness used to write 8-byte poison for every non-f32
  // dtype, which overran f16/bf16 (and bool) buffers and clobbered the
  // guard; it now uses these pieces too.
  for (const DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64}) {
    INFO(dtype_name(dt));
    const ViewSpec spec = layout_spec({3, 4}, OpLayout::strided, true);
    const GuardedOutput g = make_guarded_output(spec, dt, 5);
    CHECK(g.host.numel() == spec.buffer_numel + 10);
    CHECK(g.host.storage()->nbytes() == static_cast<std::size_t>(g.host.numel()) * itemsize(dt));
    const char* base = static_cast<const char*>(g.host.data_ptr());
    std::set<std::int64_t> view;
    for (std::int64_t p : view_positions(g.spec)) view.insert(p);
    CHECK(view.size() == 12);
    for (std::int64_t i = 0; i < g.host.numel(); ++i) {
      const char* p = base + i * static_cast<std::int64_t>(itemsize(dt));
      if (view.count(i)) {
        CHECK(is_poison(p, dt));
      } else {
        CHECK(is_guard_sentinel(p, dt));
      }
    }
    const GuardedRead r = read_guarded_output(g.host, g.spec, dt);
    CHECK(r.guard_intact);
    CHECK_FALSE(r.fully_written);
    CHECK(r.unwritten == 12);
    // Writing every view element (with any value of the dtype) makes it fully
    // written; one element written next to the view breaks the guard.
    const Tensor buf = g.host.clone();
    buf.as_strided(g.spec.shape, g.spec.strides, g.spec.offset).fill(1.0);
    const GuardedRead w = read_guarded_output(buf, g.spec, dt);
    CHECK(w.fully_written);
    CHECK(w.guard_intact);
    buf.as_strided({1}, {1}, g.spec.offset + 1).fill(0.0);  // a gap of the strided view
    CHECK_FALSE(read_guarded_output(buf, g.spec, dt).guard_intact);
  }
}

TEST_CASE("op layouts realise the same logical values with the promised strides", "[ops][runner]") {
  const Shape s = {3, 4, 5};
  CHECK(layout_spec(s, OpLayout::contiguous).strides == Shape{20, 5, 1});
  CHECK(layout_spec(s, OpLayout::transposed).strides == Shape{20, 1, 4});
  const ViewSpec b = layout_spec(s, OpLayout::broadcast);
  CHECK(b.strides[0] == 0);
  CHECK(b.buffer_numel == 20);
  CHECK(layout_spec(s, OpLayout::broadcast, true).strides == Shape{20, 5, 1});
  const ViewSpec n = layout_spec(s, OpLayout::negative);
  CHECK(n.strides == Shape{-20, 5, -1});
  CHECK(n.offset == 2 * 20 + 4);
  const ViewSpec sl = layout_spec(s, OpLayout::sliced);
  CHECK(sl.strides == Shape{4 * 16, 16, 1});
  CHECK(sl.offset == 5);
  const ViewSpec st = layout_spec(s, OpLayout::strided);
  CHECK(st.strides == Shape{4 * 11, 11, 2});
  // Same logical values in every layout: add's inputs read back equal.
  const OpDescriptor d = descriptor("add");
  std::vector<double> first;
  for (const OpLayout l : all_op_layouts()) {
    if (l == OpLayout::broadcast) continue;  // repeats values along dim 0 by design
    const OpCaseReport rep =
        run_op_case(d, DType::f32, l, 7,
                    {{"extra", Device::cpu(),
                      [&](const Tensor& out, const std::vector<Tensor>& in, const OpOptions&) {
                        if (first.empty()) {
                          first = in[0].to_vector<double>();
                        } else {
                          CHECK(in[0].to_vector<double>() == first);
                        }
                        OpOptions o;
                        o.backend = "reference";
                        add_out(out, in[0], in[1], o);
                      }}});
    INFO(rep.summary());
    CHECK(extra_result(rep).pass);
  }
}

// ---- the runner must be able to fail -------------------------------------------------

TEST_CASE("ops runner: a correct extra kernel passes on every dtype and layout", "[ops][runner]") {
  for (const char* name : {"add (broadcast)", "exp", "cast to i32", "where (broadcast)"}) {
    const OpDescriptor d = descriptor(name);
    for (const OpCaseReport& rep : run_op(d, 3, {{"extra", Device::cpu(), correct(d)}})) {
      INFO(rep.summary());
      CHECK(extra_result(rep).pass);
    }
  }
}

TEST_CASE("ops runner: a one-ulp difference passes", "[ops][runner]") {
  const OpDescriptor d = descriptor("exp");
  for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    auto nudged = [&d](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      correct(d)(out, in, o);
      const double x = out.item({1, 2, 3});
      out.set_item({1, 2, 3}, x * (1 + dtype_eps(out.dtype())));
    };
    const OpCaseReport rep =
        run_op_case(d, dt, OpLayout::sliced, 11, {{"extra", Device::cpu(), nudged}});
    INFO(rep.summary());
    CHECK(extra_result(rep).pass);
  }
}

TEST_CASE("ops runner: a wrong value in one element fails", "[ops][runner]") {
  for (const char* name : {"add (broadcast)", "softmax dim=1", "layer_norm", "embedding (i32 ids)",
                           "rotary interleaved on the k slice of a fused QKV buffer",
                           "matmul (batch broadcast)", "concat dim=1"}) {
    const OpDescriptor d = descriptor(name);
    for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
      for (const OpLayout l : all_op_layouts()) {
        // Far under anything visible, but over the bound: ~30 ulp of the dtype
        // (times the bound's growth) at the middle element.
        const Tolerance tol = d.tolerance ? d.tolerance(dt) : Tolerance{};
        std::vector<std::int64_t> at;
        auto wrong = [&](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
          correct(d)(out, in, o);
          const auto all = coords(out.shape());
          at = all[all.size() / 2];
          const double x = out.item(at);
          const double ec = dtype_eps(dt == DType::f64 ? DType::f64 : DType::f32);
          const double e = std::max(dtype_eps(out.dtype()), tol.growth * ec);
          out.set_item(at, x + 30 * e * (std::abs(x) + 8));
        };
        const OpCaseReport rep = run_op_case(d, dt, l, 12, {{"extra", Device::cpu(), wrong}});
        const OpBackendResult& r = extra_result(rep);
        INFO(rep.summary());
        CHECK_FALSE(r.pass);
        CHECK(r.over_tol == 1);
        CHECK(r.worst_coord == Shape(at.begin(), at.end()));
        CHECK(r.guard_intact);
        CHECK(r.fully_written);
      }
    }
  }
  // An integer output must match exactly.
  const OpDescriptor c = descriptor("cast to i64");
  auto off_by_one = [&c](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
    correct(c)(out, in, o);
    out.set_item({3, 8}, out.item({3, 8}) + 1);
  };
  const OpCaseReport rep =
      run_op_case(c, DType::bf16, OpLayout::negative, 13, {{"extra", Device::cpu(), off_by_one}});
  INFO(rep.summary());
  CHECK_FALSE(extra_result(rep).pass);
  CHECK(extra_result(rep).worst_coord == Shape{3, 8});
}

TEST_CASE("ops runner: a write one past the end of the output view fails on the guard",
          "[ops][runner]") {
  const OpDescriptor d = descriptor("mul");
  for (const DType dt : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    for (const OpLayout l : all_op_layouts()) {
      // One element just past the highest address the view covers.
      auto past_end = [&d](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
        correct(d)(out, in, o);
        const auto isz = static_cast<std::int64_t>(itemsize(out.dtype()));
        out.as_strided({1}, {1}, out.byte_extent().second / isz).fill(0.5);
      };
      const OpCaseReport rep = run_op_case(d, dt, l, 14, {{"extra", Device::cpu(), past_end}});
      const OpBackendResult& r = extra_result(rep);
      INFO(rep.summary());
      CHECK_FALSE(r.pass);
      CHECK_FALSE(r.guard_intact);
      CHECK(r.guard_hits == 1);
      CHECK(r.fully_written);
    }
  }
  // A loop that runs one step too far along the last dim, on a view whose
  // last dim has gaps (every other element): the write lands in a gap.
  const OpDescriptor u = descriptor("relu");
  auto one_more = [&u](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
    correct(u)(out, in, o);
    const Tensor row = out.select(0, 0).select(0, 0);  // [7], stride 2
    row.as_strided({1}, {1}, row.offset() + row.size(0) * row.stride(0)).fill(1.0);
  };
  const OpCaseReport rep =
      run_op_case(u, DType::f16, OpLayout::strided, 15, {{"extra", Device::cpu(), one_more}});
  INFO(rep.summary());
  CHECK_FALSE(extra_result(rep).guard_intact);
}

TEST_CASE("ops runner: an element left unwritten fails", "[ops][runner]") {
  const OpDescriptor d = descriptor("silu");
  for (const DType dt : {DType::f32, DType::f64, DType::f16, DType::bf16}) {
    for (const OpLayout l : all_op_layouts()) {
      // Writes every element but the last in logical order.
      auto skip_last = [&d](const Tensor& out, const std::vector<Tensor>& in, const OpOptions&) {
        const Tensor tmp = Tensor::empty(out.shape(), out.dtype());
        OpOptions o;
        o.backend = "reference";
        d.run(tmp, in, o);
        const auto all = coords(out.shape());
        for (std::size_t i = 0; i + 1 < all.size(); ++i) out.set_item(all[i], tmp.item(all[i]));
      };
      const OpCaseReport rep = run_op_case(d, dt, l, 16, {{"extra", Device::cpu(), skip_last}});
      const OpBackendResult& r = extra_result(rep);
      INFO(rep.summary());
      CHECK_FALSE(r.pass);
      CHECK_FALSE(r.fully_written);
      CHECK(r.unwritten == 1);
      CHECK(r.guard_intact);
    }
  }
  // A bool output too: its poison is a byte that is neither false nor true.
  const OpDescriptor f = descriptor("fill_");
  auto skip_first = [](const Tensor& out, const std::vector<Tensor>&, const OpOptions&) {
    const auto all = coords(out.shape());
    for (std::size_t i = 1; i < all.size(); ++i) out.set_item(all[i], 1.0);
  };
  const OpCaseReport rep = run_op_case(f, DType::boolean, OpLayout::transposed, 17,
                                       {{"extra", Device::cpu(), skip_first}});
  INFO(rep.summary());
  CHECK_FALSE(extra_result(rep).fully_written);
}

TEST_CASE("ops runner: an exception is a failure with its message", "[ops][runner]") {
  const OpDescriptor d = descriptor("neg");
  auto throws = [](const Tensor&, const std::vector<Tensor>&, const OpOptions&) {
    fail("broken_kernel", "boom");
  };
  const OpCaseReport rep =
      run_op_case(d, DType::f32, OpLayout::contiguous, 18, {{"extra", Device::cpu(), throws}});
  CHECK_FALSE(extra_result(rep).pass);
  CHECK(extra_result(rep).error == "broken_kernel: boom");
}

TEST_CASE("ops runner: a read outside an input view shows up", "[ops][runner]") {
  // The sliced and strided layouts' gaps hold NaN.
  const OpDescriptor d = descriptor("sub");
  for (const OpLayout l : {OpLayout::sliced, OpLayout::strided}) {
    auto overread = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions&) {
      OpOptions o;
      o.backend = "reference";
      const Tensor a = in[0].as_strided(in[0].shape(), in[0].strides(), in[0].offset() + 1);
      sub_out(out, a, in[1], o);
    };
    const OpCaseReport rep =
        run_op_case(d, DType::f32, l, 19, {{"extra", Device::cpu(), overread}});
    INFO(rep.summary());
    CHECK_FALSE(extra_result(rep).pass);
  }
}

TEST_CASE("ops runner: a kernel that ignores an input's strides fails", "[ops][runner]") {
  // Reads x as if it were row-major from its first element: right for the
  // contiguous layout only.
  const OpDescriptor d = descriptor("softmax dim=-1");
  for (const OpLayout l : {OpLayout::transposed, OpLayout::strided, OpLayout::sliced}) {
    auto row_major = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions&) {
      const Tensor& x = in[0];
      Shape st(x.shape().size(), 1);
      for (int i = x.dim() - 2; i >= 0; --i) st[i] = st[i + 1] * x.size(i + 1);
      OpOptions o;
      o.backend = "reference";
      softmax_out(out, x.as_strided(x.shape(), st, x.offset()), -1, o);
    };
    const OpCaseReport rep =
        run_op_case(d, DType::f32, l, 20, {{"extra", Device::cpu(), row_major}});
    INFO(rep.summary());
    CHECK_FALSE(extra_result(rep).pass);
  }
}
