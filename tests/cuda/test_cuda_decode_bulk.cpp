// The bulk-copy decode kernel (backends/cuda/attention/decode/bulk_kernel.cuh:
// a producer warp copies K and V into a ring of shared-memory slots with
// cp.async.bulk, consumer warps take the keys from there; the row's last
// split merges any number of splits): the bf16/f16 default for d, dv <= 128
// above a few thousand scores. The hidden [decode_bulk] case runs this
// binary once per dtype with STRATA_CUDA_VARIANT forcing it on every call
// (the variable is read once per process) through the decode suites
// ([decode], [decode_merge]) and the cases below ([decode_bulk_cases]), each
// against the f64 reference; each child's output goes to
// <tmp>/strata_decode_bulk_<name>.log. Run it with strata_cuda_tests
// "[decode_bulk]" on an sm_90 GPU, or one configuration with
// STRATA_CUDA_VARIANT=<name> strata_cuda_tests "<its spec>"; the cases alone
// also hold for the register decode kernels. The bulk-copy candidate a
// tuning build keeps runs through the same suites in [attention_lab]
// (test_cuda_attention_lab.cpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cuda/attention_pass.hpp"
#include "cuda/child_rerun.hpp"
#include "strata/attention.hpp"
#include "strata/detail/attention_plan.hpp"
#include "strata/harness.hpp"
#include "strata/tensor.hpp"

namespace strata::cuda {
// backends/cuda/attention/dispatch/launch_streaming.cu: "<variant> grid=.. splits=..
// [merge=in_kernel|merge=kernel] ...".
std::string attention_plan(const AttentionArgs& a);
}  // namespace strata::cuda

using namespace strata;
using strata::harness::AttentionCase;
using strata::harness::MaskKind;

namespace {

const Device kGpu = Device::cuda(0);

// The bulk-copy configurations forced through the decode suites and the
// cases below.
const std::vector<std::string>& bulk_configs() {
  static const std::vector<std::string> c = {"bf16.decode.d128.bulk", "f16.decode.d128.bulk"};
  return c;
}

std::string dt_name(DType dt) { return dt == DType::bf16 ? "bf16" : "f16"; }

// The bulk-copy configuration STRATA_CUDA_VARIANT forces for dtype dt, or "".
std::string forced_for(DType dt) {
  const char* e = std::getenv("STRATA_CUDA_VARIANT");
  const std::string f = e ? e : "";
  return f.rfind(dt_name(dt) + ".decode.d128.bulk", 0) == 0 ? f : "";
}

// The launcher's plan for contiguous q [batch, Hq, M, d], k [batch, Hkv, N,
// d], v [batch, Hkv, N, dv] (the variant and the split count depend on the
// sizes and dtype, not on the layout).
std::string plan_for(const AttentionCase& c) {
  const auto shape = [&](std::int64_t h, std::int64_t rows, std::int64_t cols) {
    Shape s = c.batch;
    s.insert(s.end(), {h, rows, cols});
    return s;
  };
  const Tensor q = Tensor::zeros(shape(c.Hq, c.M, c.d), c.dtype, kGpu);
  const Tensor k = Tensor::zeros(shape(c.Hkv, c.N, c.d), c.dtype, kGpu);
  const Tensor v = Tensor::zeros(shape(c.Hkv, c.N, c.dv), c.dtype, kGpu);
  const AttentionOptions opt;
  const detail::AttentionPlan plan = detail::plan_attention("softmax_attention", q, k, v, opt);
  const Tensor out = Tensor::empty(plan.out_shape, c.dtype, kGpu);
  return cuda::attention_plan(detail::make_attention_args(plan, out, Tensor(), q, k, v, nullptr));
}

std::int64_t splits_in(const std::string& plan) {
  const std::size_t at = plan.find("splits=");
  REQUIRE(at != std::string::npos);
  return std::stoll(plan.substr(at + 7));
}

// A forced configuration takes every call of its dtype with d, dv <= 128, and
// merges every split count in the kernel.
void require_planned(const AttentionCase& c) {
  const std::string f = forced_for(c.dtype);
  if (f.empty() || c.d > 128 || c.dv > 128) return;
  const std::string plan = plan_for(c);
  INFO(plan);
  REQUIRE(plan.rfind(f + " ", 0) == 0);
  if (splits_in(plan) > 1) REQUIRE(plan.find("merge=in_kernel") != std::string::npos);
}

void require_pass(const AttentionCase& c) {
  require_planned(c);
  strata_test::require_cuda_attention_pass(c, [&](const std::string& name) {
    return name == "cuda.attention.decode_" + dt_name(c.dtype);
  });
}

// Largest |a - b| over the elements; NaN when a holds a NaN.
double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to(Device::cpu()).to_vector<double>();
  const std::vector<double> y = b.to(Device::cpu()).to_vector<double>();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) return std::nan("");
    m = std::max(m, std::abs(x[i] - y[i]));
  }
  return m;
}

// K and V stored as a KV cache [batch, N, Hkv, d] (a view [batch, Hkv, N, d]
// with row stride Hkv * d): with d a multiple of 8 each row is a bulk copy
// of its own. `pad` extra elements per row (8: still copies; 4 with d 128:
// heads 132 elements apart, so the odd KV head is only 8-byte aligned and
// takes the register path, the even one copies) and an `offset` into the
// buffer (4 elements: every head 8-byte aligned, the register path) vary
// it. Checked against the f64 reference on the CPU.
struct CacheCase {
  DType dt;
  std::int64_t M, N, d, dv;
  std::int64_t pad = 0, offset = 0;
  bool mask = false;
};

Tensor cache_view(const Tensor& store, std::int64_t N, std::int64_t H, std::int64_t d,
                  std::int64_t pad, std::int64_t offset) {
  // store: [2, N, H, d + pad] elements from `offset` on, flat.
  const Tensor t = store.narrow(0, offset, 2 * N * H * (d + pad)).reshape({2, N, H, d + pad});
  return t.narrow(3, 0, d).transpose(1, 2);
}

void run_cache_case(const CacheCase& cc, std::uint64_t seed) {
  constexpr std::int64_t Hq = 8, Hkv = 2;
  AttentionCase sizes = harness::batched_case(cc.M, cc.N, cc.d, cc.dv, cc.dt, seed);
  sizes.Hq = Hq;
  sizes.Hkv = Hkv;
  require_planned(sizes);
  const Tensor q = Tensor::randn({2, Hq, cc.M, cc.d}, seed, cc.dt, kGpu);
  const auto stored = [&](std::int64_t d, std::uint64_t s) {
    const std::int64_t n = cc.offset + 2 * cc.N * Hkv * (d + cc.pad);
    return cache_view(Tensor::randn({n}, s, cc.dt, kGpu), cc.N, Hkv, d, cc.pad, cc.offset);
  };
  const Tensor k = stored(cc.d, seed + 1), v = stored(cc.dv, seed + 2);
  REQUIRE(k.shape() == Shape{2, Hkv, cc.N, cc.d});
  AttentionOptions opt, ro;
  ro.backend = "reference";
  if (cc.mask) {
    // Keys kept with probability ~0.8, the decode step's cache mask [N].
    std::vector<float> keep = Tensor::rand({cc.N}, seed + 3).to_vector<float>();
    for (float& x : keep) x = x < 0.8f ? 1.0f : 0.0f;
    const Tensor m = Tensor::from_vector(keep, {cc.N}).to(DType::boolean);
    opt.mask = m.to(kGpu);
    ro.mask = m;
  }
  const Tensor out = Tensor::empty({2, Hq, cc.M, cc.dv}, cc.dt, kGpu);
  const Tensor lse = Tensor::empty({2, Hq, cc.M}, detail::lse_dtype(cc.dt), kGpu);
  softmax_attention_out(out, q, k, v, opt, lse);
  const auto host = [](const Tensor& t) { return t.contiguous().to(Device::cpu()).to(DType::f64); };
  const AttentionResult r = softmax_attention_lse(host(q), host(k), host(v), ro);
  CHECK(max_abs_diff(out, r.out) <= (cc.dt == DType::bf16 ? 2e-2 : 4e-3));
  CHECK(max_abs_diff(lse, r.lse) <= 1e-4);
}

}  // namespace

// Key counts around the slot size (64 keys, and half of it) and the ring
// (4 slots), so that the last slot is partial, a block sees fewer keys than
// a slot, and long splits wrap the ring many times (the empty barriers'
// parity); head dims 64, 80 (rows of 160 bytes) and 128, dv != d;
// contiguous K and V (one bulk copy per slot and tensor), broadcast ones
// (the same), and transposed ones and d 100 (the register path); masks,
// bands that leave splits empty, fully masked rows, N = 0. Hidden:
// meaningful with STRATA_CUDA_VARIANT set (the parent below).
TEST_CASE("cuda decode bulk: slots, ring, layouts, masks",
          "[.][cuda][attention][decode_bulk_cases]") {
  std::uint64_t seed = 16000;
  for (DType dt : {DType::bf16, DType::f16}) {
    int variant = 0;
    for (std::int64_t M : {1, 3, 8}) {
      for (std::int64_t N : {0, 1, 31, 33, 95, 700, 5000}) {
        for (auto [d, dv] : std::vector<std::array<std::int64_t, 2>>{
                 {128, 128}, {64, 64}, {80, 80}, {64, 128}, {128, 8}}) {
          AttentionCase c = harness::batched_case(M, N, d, dv, dt, ++seed);
          c.Hq = 8;
          c.Hkv = 2;
          // One extra condition per case, in turn.
          switch (variant++ % 6) {
            case 1:
              c.mask = MaskKind::bool_full;
              c.masked_rows = M > 1;
              break;
            case 2:
              c.mask = MaskKind::float_full;
              break;
            case 3:
              c.causal = Causal::bottom_right;
              c.window = std::make_pair<std::int64_t, std::int64_t>(200, 0);
              break;
            case 4:
              c.layout = harness::Layout::broadcast;
              break;
            case 5:
              c.mask = MaskKind::bool_bcast;
              c.layout = harness::Layout::transposed;
              break;
            default:
              break;
          }
          INFO(dt_name(dt) << " M " << M << " N " << N << " d " << d << " dv " << dv << " "
                           << c.describe());
          require_pass(c);
        }
      }
    }
    AttentionCase c = harness::batched_case(2, 700, 100, 100, dt, ++seed);
    INFO(dt_name(dt) << " d 100");
    require_pass(c);
  }
}

// One row over as many splits as the plan makes: on an H200 (132 SMs)
// 25344 keys are 132 splits of 192 keys for the bulk-copy kernel (one block
// per SM), merged by the row's last block 16 splits at a time; large logits (the rescaling across
// splits) and a window that empties most splits.
TEST_CASE("cuda decode bulk: one row over many splits", "[.][cuda][attention][decode_bulk_cases]") {
  std::uint64_t seed = 16500;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int step = 0; step < 3; ++step) {
      AttentionCase c;
      c.dtype = dt;
      c.N = 25344;
      c.d = 128;
      c.dv = 128;
      c.seed = ++seed;
      if (step == 1) c.input_scale = 8.0;
      if (step == 2) {
        c.causal = Causal::bottom_right;
        c.window = std::make_pair<std::int64_t, std::int64_t>(3000, 0);
      }
      INFO(dt_name(dt) << " step " << step << " plan " << plan_for(c));
      require_pass(c);
    }
  }
}

// K and V as a KV cache [batch, N, Hkv, d]: rows Hkv * d apart, each its
// own bulk copy; rows padded by 8 (still copies), by 4 (half the heads on
// the register path) or from an offset of 4 elements (all of them).
TEST_CASE("cuda decode bulk: KV-cache layouts", "[.][cuda][attention][decode_bulk_cases]") {
  std::uint64_t seed = 17000;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (const CacheCase& cc : std::vector<CacheCase>{
             {dt, 1, 45, 128, 128},
             {dt, 1, 3000, 128, 128, 0, 0, true},
             {dt, 4, 700, 64, 128},
             {dt, 2, 3000, 80, 80, 8, 0},
             {dt, 1, 3000, 128, 128, 4, 0},
             {dt, 3, 3000, 128, 128, 0, 4, true},
         }) {
      INFO(dt_name(dt) << " M " << cc.M << " N " << cc.N << " d " << cc.d << " dv " << cc.dv
                       << " pad " << cc.pad << " offset " << cc.offset << " mask " << cc.mask);
      run_cache_case(cc, seed += 10);
    }
  }
}

// Each bulk-copy configuration, forced, through the decode suites and the
// cases above.
TEST_CASE("cuda decode bulk: each configuration through the decode suites", "[.][decode_bulk]") {
  for (const std::string& name : bulk_configs())
    strata_test::rerun_with_env("STRATA_CUDA_VARIANT", name.c_str(),
                                "[decode],[decode_merge],[decode_bulk_cases]",
                                "strata_decode_bulk_" + name + ".log");
}
