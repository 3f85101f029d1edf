// The decode attention kernel's in-kernel split-KV merge
// (docs/guide/cuda-decode.md, "Decode kernel"): the block that finishes a row's splits last merges
// them, by ticket counters that every launch leaves at 0. Checked against the f64 reference for 1,
// 2, 7 and the most splits the plan makes (read from the launcher's plan string), on every decode
// dtype; repeated calls whose split counts change (a counter not put back to 0 leaves out unmerged:
// out is poisoned with NaN before each call); a captured graph replayed
// three times on new inputs, bit-identical to eager calls; and a capture
// on a stream that has no counters yet (the separate merge kernel). The
// [decode_bulk] case of test_cuda_decode_bulk.cpp runs this file again with
// the bulk-copy decode kernel forced.
// Part of strata_cuda_tests, which exits 77 (skip) without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ops_test_util.hpp"
#include "strata/attention.hpp"
#include "strata/detail/attention_plan.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "strata/harness.hpp"
#include "strata/tensor.hpp"

namespace strata::cuda {
// backends/cuda/attention/dispatch/launch_streaming.cu: "<variant> grid=.. splits=..
// [merge=in_kernel|merge=kernel] ...".
std::string attention_plan(const AttentionArgs& a);
}  // namespace strata::cuda

using namespace strata;
using strata::harness::AttentionCase;

namespace {

const Device kGpu = Device::cuda(0);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The benchmark model's attention shape: 8 query heads on 2 KV heads, d 64.
struct Shape4 {
  std::int64_t M, N;
};

// The launcher's plan for q [1, 8, M, 64], k, v [1, 2, N, 64] of dtype dt.
std::string plan_for(DType dt, Shape4 s) {
  const Tensor q = Tensor::zeros({1, 8, s.M, 64}, dt, kGpu);
  const Tensor k = Tensor::zeros({1, 2, s.N, 64}, dt, kGpu);
  const AttentionOptions opt;
  const detail::AttentionPlan plan = detail::plan_attention("softmax_attention", q, k, k, opt);
  const Tensor out = Tensor::empty(plan.out_shape, dt, kGpu);
  return cuda::attention_plan(detail::make_attention_args(plan, out, Tensor(), q, k, k, nullptr));
}

std::int64_t splits_in(const std::string& plan) {
  const std::size_t at = plan.find("splits=");
  REQUIRE(at != std::string::npos);
  return std::stoll(plan.substr(at + 7));
}

// Key counts whose plans have 1, 2 and 7 splits (fewer where a wave of
// blocks holds fewer: the bulk-copy kernel, forced by STRATA_CUDA_VARIANT,
// fills one block per SM) and the most (40000 keys fill a wave of blocks:
// twice as many keys give no more splits, but for the rounding of keys per
// split). The register decode kernels take 32 keys per tile (the bulk-copy
// kernel 64) and one tile per split at least.
std::vector<std::int64_t> split_sweep(DType dt, std::int64_t M) {
  const std::string most = plan_for(dt, {M, 40000});
  INFO(most);
  const std::int64_t n_most = splits_in(most);
  REQUIRE(n_most > 2);
  REQUIRE(std::abs(n_most - splits_in(plan_for(dt, {M, 80000}))) <= 1);
  REQUIRE(most.find("merge=in_kernel") != std::string::npos);
  std::int64_t tile = 32;
  if (splits_in(plan_for(dt, {M, 2 * tile - 5})) == 1) tile = 64;
  std::vector<std::int64_t> Ns;
  for (std::int64_t want :
       {std::int64_t(1), std::int64_t(2), std::min<std::int64_t>(7, n_most - 1)}) {
    const std::int64_t N = tile * want - 5;
    const std::string plan = plan_for(dt, {M, N});
    INFO(plan);
    REQUIRE(plan.find("decode") != std::string::npos);
    REQUIRE(splits_in(plan) == want);
    REQUIRE((plan.find("merge=in_kernel") != std::string::npos) == (want > 1));
    Ns.push_back(N);
  }
  Ns.push_back(40000);
  return Ns;
}

void require_pass(const AttentionCase& c) {
  const harness::CaseReport r = harness::run_attention_case(c);
  INFO(r.summary());
  bool saw_cuda = false;
  for (const auto& b : r.results) {
    if (b.backend != "cuda") continue;
    saw_cuda = true;
    CHECK(b.kernel.find("cuda.attention.") == 0);
    CHECK(b.error.empty());
    CHECK(b.fully_written);
    CHECK(b.guard_intact);
    CHECK(b.pass);
  }
  CHECK(saw_cuda);
}

// Largest |a - b| over the elements, NaN when any element of a is NaN.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) return kNaN;
    m = std::max(m, std::abs(x[i] - y[i]));
  }
  return m;
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
  return true;
}

// out's tolerance against the f64 reference, for values of a few units:
// the dtype's rounding of out (bf16/f16 round once at the end).
double tolerance(DType dt) { return ops_test::per_dtype(dt, 1e-12, 2e-5, 4e-3, 2e-2, 2e-2); }

// One decode-shaped problem on the GPU: q [1, 8, M, 64], k, v [1, 2, N, 64],
// a bool mask over the keys (the decode step's cache mask), and its f64
// reference out / lse.
struct Problem {
  Tensor q, k, v, mask, out, lse, ref_out, ref_lse;
  AttentionOptions opt;
};

// Recomputes the reference for p's current q (k, v, mask unchanged).
void reference(Problem& p) {
  const auto host = [](const Tensor& t) { return t.to(Device::cpu()).to(DType::f64); };
  AttentionOptions ro;
  ro.backend = "reference";
  ro.mask = p.mask.to(Device::cpu());
  const AttentionResult r = softmax_attention_lse(host(p.q), host(p.k), host(p.v), ro);
  p.ref_out = r.out;
  p.ref_lse = r.lse;
}

Problem make_problem(DType dt, Shape4 s, std::uint64_t seed) {
  Problem p;
  p.q = Tensor::randn({1, 8, s.M, 64}, seed, dt, kGpu);
  p.k = Tensor::randn({1, 2, s.N, 64}, seed + 1, dt, kGpu);
  p.v = Tensor::randn({1, 2, s.N, 64}, seed + 2, dt, kGpu);
  // Keys kept with probability ~0.9 (whole splits of a short cache may go).
  p.mask = Tensor::rand({s.N}, seed + 3, DType::f32, Device::cpu());
  std::vector<float> keep = p.mask.to_vector<float>();
  for (float& x : keep) x = x < 0.9f ? 1.0f : 0.0f;
  p.mask = Tensor::from_vector(keep, {s.N}).to(DType::boolean).to(kGpu);
  p.opt.mask = p.mask;
  p.out = Tensor::empty({1, 8, s.M, 64}, dt, kGpu);
  p.lse = Tensor::empty({1, 8, s.M}, detail::lse_dtype(dt), kGpu);
  reference(p);
  return p;
}

// make_problem for a shape whose plan splits the keys (checked): the graph
// tests' merge must run.
Problem split_problem(DType dt, Shape4 s, std::uint64_t seed) {
  REQUIRE(splits_in(plan_for(dt, s)) > 1);
  return make_problem(dt, s, seed);
}

void poison(const Problem& p, void* stream) {
  OpOptions o;
  o.stream = stream;
  fill_(p.out, kNaN, o);
  fill_(p.lse, kNaN, o);
}

void check_against_reference(const Problem& p) {
  const DType dt = p.out.dtype();
  CHECK(max_abs_diff(p.out, p.ref_out) <= tolerance(dt));
  CHECK(max_abs_diff(p.lse, p.ref_lse) <= (dt == DType::f64 ? 1e-12 : 2e-5));
}

// Three replays of g on s, each on a new q (seeds seed0, seed0 + 1, ...)
// and a poisoned out, checked against the reference; then after(), still
// under the replay's INFO.
template <class After>
void replays_match_reference(Problem& p, Graph& g, Stream& s, std::uint64_t seed0,
                             const After& after) {
  const DType dt = p.out.dtype();
  for (int replay = 0; replay < 3; ++replay) {
    INFO("replay " << replay);
    p.q.copy_from(Tensor::randn(p.q.shape(), seed0 + replay, dt));
    reference(p);
    poison(p, s.handle());
    g.replay(s);
    s.synchronize();
    check_against_reference(p);
    after();
  }
}

}  // namespace

// Splits 1, 2, 7 and the most, with the harness's own checks (f64
// reference, guards, every element written) and its masks and bands:
// fully masked rows (m = -inf in every split) and a window that leaves most
// splits of a row empty.
TEST_CASE("cuda decode merge: 1 to the most splits against the reference",
          "[cuda][attention][decode_merge]") {
  std::uint64_t seed = 7000;
  for (DType dt : {DType::f32, DType::f64, DType::bf16, DType::f16}) {
    for (std::int64_t M : {1, 5}) {
      for (std::int64_t N : split_sweep(dt, M)) {
        AttentionCase c;
        c.dtype = dt;
        c.Hq = 8;
        c.Hkv = 2;
        c.M = M;
        c.N = N;
        c.d = 64;
        c.dv = 64;
        c.seed = ++seed;
        INFO(strata::dtype_name(dt) << " M " << M << " N " << N);
        require_pass(c);
        c.mask = harness::MaskKind::bool_full;
        c.masked_rows = true;
        c.seed = ++seed;
        require_pass(c);
        c.mask = harness::MaskKind::none;
        c.masked_rows = false;
        c.window = std::make_pair<std::int64_t, std::int64_t>(40, 0);
        c.seed = ++seed;
        require_pass(c);
      }
    }
  }
}

// Calls with different split counts on the same row groups, in turn, each
// into a poisoned out: every call must find its counters at 0 (else no
// block takes the last ticket and out stays NaN, or a block merges before
// all partials are there) and give the first call's bits again. (123 keys
// still make 2 splits of the bulk-copy kernel's 64-key tiles.)
TEST_CASE("cuda decode merge: repeated calls reuse the counters",
          "[cuda][attention][decode_merge]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(strata::dtype_name(dt));
    std::vector<Problem> ps;
    std::uint64_t seed = 7500;
    for (std::int64_t N : {217, 40000, 123}) ps.push_back(make_problem(dt, {3, N}, seed += 10));
    for (const Problem& p : ps) REQUIRE(splits_in(plan_for(dt, {3, p.k.size(2)})) > 1);
    std::vector<Tensor> first;
    for (int round = 0; round < 4; ++round) {
      for (std::size_t i = 0; i < ps.size(); ++i) {
        const Problem& p = ps[i];
        INFO("round " << round << " N " << p.k.size(2));
        poison(p, nullptr);
        softmax_attention_out(p.out, p.q, p.k, p.v, p.opt, p.lse);
        check_against_reference(p);
        if (round == 0) {
          first.push_back(p.out.clone());
        } else {
          CHECK(bit_equal(p.out, first[i]));
        }
      }
    }
  }
}

// The decode step's pattern: one eager call on the stream, then a capture,
// replayed three times on new q (written in place), each replay checked
// against the reference and bit for bit against an eager call on the
// default stream.
TEST_CASE("cuda decode merge: a captured call replays three times",
          "[cuda][attention][decode_merge][graph]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(strata::dtype_name(dt));
    Problem p = split_problem(dt, {1, 520}, 7700);
    Stream s(kGpu);
    AttentionOptions so = p.opt;
    so.stream = s.handle();
    softmax_attention_out(p.out, p.q, p.k, p.v, so, p.lse);  // first use outside the capture
    Graph g = Graph::capture(s, [&] { softmax_attention_out(p.out, p.q, p.k, p.v, so, p.lse); });
    REQUIRE(g.defined());
    const Tensor eager_out = Tensor::empty(p.out.shape(), dt, kGpu);
    const Tensor eager_lse = Tensor::empty(p.lse.shape(), p.lse.dtype(), kGpu);
    replays_match_reference(p, g, s, 7800, [&] {
      softmax_attention_out(eager_out, p.q, p.k, p.v, p.opt, eager_lse);
      CHECK(bit_equal(p.out, eager_out));
      CHECK(bit_equal(p.lse, eager_lse));
    });
  }
}

// A capture on a new stream, with no eager call there first: the launcher
// cannot allocate counters while capturing and records the separate merge
// kernel instead; the replays are still right.
TEST_CASE("cuda decode merge: a capture on a stream without counters",
          "[cuda][attention][decode_merge][graph]") {
  for (DType dt : {DType::f32, DType::bf16}) {
    INFO(strata::dtype_name(dt));
    Problem p = split_problem(dt, {2, 2000}, 7900);
    softmax_attention_out(p.out, p.q, p.k, p.v, p.opt, p.lse);  // kernel set-up, default stream
    check_against_reference(p);
    Stream s(kGpu);
    AttentionOptions so = p.opt;
    so.stream = s.handle();
    Graph g = Graph::capture(s, [&] { softmax_attention_out(p.out, p.q, p.k, p.v, so, p.lse); });
    replays_match_reference(p, g, s, 7950, [] {});
  }
}
