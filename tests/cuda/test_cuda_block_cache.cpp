// The cuda runtime's host block cache (backends/cuda/runtime/block_cache.hpp,
// docs/guide/cuda-runtime.md, "Memory"): freed small blocks come back without a pool call,
// and results stay right when every step's output reuses a block a queued
// kernel still reads or writes: eager chains on the default stream, on one
// Stream of the caller's and alternating between the two, two threads at
// once, and buffers from the cache used by a recorded graph while eager
// allocations churn between replays. While a graph records the cache stands
// aside (an allocation there fails as before), and an allocation the pool
// cannot serve empties it first. The cache is on unless
// STRATA_CUDA_BLOCK_CACHE=0: the suite's own run checks that it is on, and
// "[block_cache_off]" reruns these cases (and the pool, graph and
// concurrency ones) in a child with it off, where the results must hold
// alike.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "../../backends/cuda/runtime/block_cache.hpp"
#include "catch.hpp"
#include "child_rerun.hpp"
#include "dependent_steps.hpp"
#include "strata/elementwise.hpp"
#include "strata/graph.hpp"
#include "test_core_util.hpp"

namespace strata::cuda {  // testing hooks of backends/cuda/cuda_runtime.cu
bool block_cache_stats_for_test(int index, BlockCacheStats* out);
std::size_t block_cache_trim_for_test(int index);
}  // namespace strata::cuda

using namespace strata;
using strata::cuda::BlockCacheStats;

namespace {

const Device kGpu = Device::cuda(0);

// The cache's counters; false when the cache is off.
bool cache_stats(BlockCacheStats* s) { return cuda::block_cache_stats_for_test(0, s); }

// Whether the cache is on in this process, checking that it is off exactly
// when STRATA_CUDA_BLOCK_CACHE=0 says so.
bool cache_on(BlockCacheStats* s) {
  const bool on = cache_stats(s);
  const char* e = std::getenv("STRATA_CUDA_BLOCK_CACHE");
  CHECK(on == !(e != nullptr && std::string(e) == "0"));
  return on;
}

// Element counts of f32 tensors: the smallest class, a middle one, exactly
// the largest cached class (1 MiB) and one beyond it (straight to the pool).
const std::vector<std::int64_t> kSizes = {4, 1000, 1 << 18, (1 << 18) + 1};

// Queues ~1 ms of work on `opt`'s stream, so the host queues what follows
// while it runs and freed blocks are handed out again before their kernels end.
void keep_gpu_busy(const Tensor& big, const OpOptions& opt) {
  for (int i = 0; i < 6; ++i) add_out(big, big, big, opt);
}

// x <- (i - x) + b for i = 0..steps-1, each step on opts[i % opts.size()],
// every intermediate a new tensor whose predecessor was just freed; checked
// against the same recurrence on the host (integers: exact in f32).
void dependent_chain(std::int64_t n, int steps, const std::vector<OpOptions>& opts,
                     const Tensor& big) {
  INFO("n = " << n);
  const Tensor b = add(Tensor::arange(n, DType::f32, kGpu), -0.5 * double(n));
  Tensor x = mul(b, 3.0);
  std::vector<double> want = x.to_vector<double>();
  const std::vector<double> bv = b.to_vector<double>();
  keep_gpu_busy(big, opts[0]);
  for (int i = 0; i < steps; ++i) {
    const OpOptions& o = opts[static_cast<std::size_t>(i) % opts.size()];
    Tensor t = rsub(x, double(i), o);
    x = add(t, b, o);  // the old x's block is free again, t's at the end of the step
    for (std::size_t k = 0; k < want.size(); ++k) want[k] = (double(i) - want[k]) + bv[k];
  }
  const std::vector<double> got = x.to_vector<double>();  // synchronous for the host
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    INFO("element " << k);
    REQUIRE(got[k] == want[k]);
  }
}

}  // namespace

TEST_CASE("cuda block cache: a freed small block is handed out again without the pool",
          "[cuda][block_cache]") {
  BlockCacheStats s0;
  if (!cache_on(&s0)) return;  // off, as cache_on checked: the default run has it on
  Tensor a = Tensor::empty({4}, DType::f32, kGpu);
  void* const pa = a.data_ptr();
  a = Tensor();
  const BlockCacheStats s1 = [] {
    BlockCacheStats s;
    REQUIRE(cache_stats(&s));
    return s;
  }();
  CHECK(s1.cached_blocks >= 1);
  // Another size of the 512-byte class: the same block, from the free list.
  const Tensor b = Tensor::empty({100}, DType::f32, kGpu);
  CHECK(b.data_ptr() == pa);
  BlockCacheStats s2;
  REQUIRE(cache_stats(&s2));
  CHECK(s2.hits == s1.hits + 1);
  CHECK(s2.misses == s1.misses);
  // After a warm-up, allocating ops of cached sizes miss no more.
  for (int round = 0; round < 3; ++round) {
    for (std::int64_t n : kSizes) fill_(Tensor::empty({n}, DType::f32, kGpu), 1.0);
    (void)add(b, b);
  }
  BlockCacheStats s3;
  REQUIRE(cache_stats(&s3));
  for (int round = 0; round < 20; ++round) {
    for (std::int64_t n : kSizes) fill_(Tensor::empty({n}, DType::f32, kGpu), 1.0);
    (void)add(b, b);
  }
  BlockCacheStats s4;
  REQUIRE(cache_stats(&s4));
  CHECK(s4.misses == s3.misses);
  CHECK(s4.hits == s3.hits + 20 * 4);  // three cached sizes and add's output; 1 MiB + 4 B is not
  CHECK(s4.owned_blocks == s3.owned_blocks);
}

TEST_CASE("cuda block cache: dependent allocating ops reuse freed blocks and stay right",
          "[cuda][block_cache]") {
  const Tensor big = Tensor::zeros({std::int64_t(1) << 26}, DType::f32, kGpu);
  Stream st(kGpu);
  OpOptions dflt, mine;
  mine.stream = st.handle();
  SECTION("default stream") {
    for (std::int64_t n : kSizes) dependent_chain(n, 40, {dflt}, big);
  }
  SECTION("one stream of the caller's") {
    for (std::int64_t n : kSizes) dependent_chain(n, 40, {mine}, big);
    st.synchronize();
  }
  SECTION("alternating between the default stream and a blocking stream") {
    for (std::int64_t n : kSizes) dependent_chain(n, 40, {dflt, mine}, big);
    for (std::int64_t n : kSizes) dependent_chain(n, 40, {mine, dflt}, big);
    st.synchronize();
  }
}

// Two streams of the caller's are each ordered with the default stream but
// not with each other. A block read by queued work on one must not be handed
// to work on the other: while two streams are alive the cache stands aside
// (its free goes to the pool, ordered after both streams' earlier work).
// With the cache handing x's block to y, the fill on s1 overwrites x before
// the queued add on s2 reads it, and z comes out -7.
TEST_CASE("cuda block cache: a block used on one stream is not handed to another stream's work",
          "[cuda][block_cache]") {
  const Tensor big = Tensor::zeros({std::int64_t(1) << 26}, DType::f32, kGpu);
  Stream s1(kGpu), s2(kGpu);
  OpOptions o1, o2;
  o1.stream = s1.handle();
  o2.stream = s2.handle();
  for (std::int64_t n : {std::int64_t(4), std::int64_t(1000), std::int64_t(1) << 18}) {
    INFO("n = " << n);
    Tensor x =
        Tensor::arange(n, DType::f32, kGpu);  // queued on the default stream: s2 waits for it
    keep_gpu_busy(big, o2);
    const Tensor z = add(x, 0.0, o2);  // reads x once the busy work on s2 is done
    x = Tensor();  // the pool may hand x's memory to y, in the default stream's order
    const Tensor y = Tensor::empty({n}, DType::f32, kGpu);
    fill_(y, -7.0, o1);
    s1.synchronize();
    s2.synchronize();
    const std::vector<double> got = z.to_vector<double>();
    REQUIRE(got.size() == static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) REQUIRE(got[static_cast<std::size_t>(k)] == double(k));
  }
}

TEST_CASE("cuda block cache: two threads allocating on the default stream stay right",
          "[cuda][block_cache]") {
  const Tensor big = Tensor::zeros({std::int64_t(1) << 24}, DType::f32, kGpu);
  std::vector<int> failures(2, 0);
  auto worker = [&](int id) {
    for (int round = 0; round < 4; ++round)
      for (std::int64_t n : {std::int64_t(4), std::int64_t(1000), std::int64_t(1) << 16}) {
        const Tensor b = Tensor::full({n}, double(id + 1), DType::f32, kGpu);
        Tensor x = Tensor::zeros({n}, DType::f32, kGpu);
        for (int i = 0; i < 30; ++i) {
          if (i % 10 == 0) add_out(big, big, big);
          Tensor t = add(x, b);
          x = mul(t, 1.0);
        }
        for (float v : x.to_vector<float>())
          failures[static_cast<std::size_t>(id)] += v != 30.0f * float(id + 1);
      }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  CHECK(failures[0] == 0);
  CHECK(failures[1] == 0);
}

TEST_CASE("cuda block cache: buffers from the cache in a recorded graph, churn between replays",
          "[cuda][block_cache][graph]") {
  // Blocks of the buffers' classes freed first, so the buffers come from the
  // free lists; between runs, allocating ops on the default stream take and
  // free blocks of the same classes while the graph's buffers stay live.
  const std::int64_t K = 1000;
  for (int i = 0; i < 4; ++i) {
    (void)Tensor::zeros({K}, DType::f32, kGpu);
    (void)Tensor::zeros({1}, DType::f32, kGpu);
  }
  const Tensor x0 = add(Tensor::arange(K, DType::f32, kGpu), -500.0);
  const Tensor d = Tensor::zeros({K}, DType::f32, kGpu), s = Tensor::zeros({1}, DType::f32, kGpu);
  const Tensor xa = Tensor::zeros({K}, DType::f32, kGpu), y = Tensor::zeros({K}, DType::f32, kGpu);
  Stream st(kGpu);
  OpOptions opt;
  opt.stream = st.handle();
  auto step = [&] {
    add_out(xa, x0, d, opt);
    mul_out(xa, xa, s, opt);
    add_out(y, y, xa, opt);
  };
  strata_test::eager_then_replayed(
      st, y,
      [&](double dv, double sv) {
        for (int i = 0; i < 3; ++i) (void)mul(add(x0, dv), sv);  // churn, default stream
        fill_(d, dv, opt);
        fill_(s, sv, opt);
      },
      step,
      [&](const Tensor& y_before, float dv, float sv) {
        const auto before = y_before.to_vector<double>(), x = x0.to_vector<double>();
        const auto got = y.to_vector<double>();
        for (std::size_t k = 0; k < got.size(); ++k) {
          INFO("element " << k);
          REQUIRE(got[k] == before[k] + (x[k] + double(dv)) * double(sv));
        }
      });
}

// Makes CUDA API errors on purpose: compute-sanitizer runs exclude it
// ("[graph]~[graph_errors]").
TEST_CASE("cuda block cache: stands aside while a graph records",
          "[cuda][block_cache][graph][graph_errors]") {
  Stream st(kGpu);
  OpOptions opt;
  opt.stream = st.handle();
  (void)Tensor::empty({4}, DType::f32, kGpu);  // a free 512-byte block, when the cache is on
  BlockCacheStats before;
  const bool on = cache_on(&before);
  // A cached block would serve this without a CUDA call; inside a capture
  // the pool is asked, and refuses, as Graph::capture promises.
  CORE_REQUIRE_ERROR(Graph::capture(st, [&] { (void)Tensor::empty({4}, DType::f32, kGpu); }),
                     "Graph::capture", "must not allocate");
  if (on) {
    BlockCacheStats after;
    REQUIRE(cache_stats(&after));
    CHECK(after.hits == before.hits);
    CHECK(after.cached_blocks == before.cached_blocks);
  }
  // A block freed inside a capture goes to the pool (whose refusal ends the
  // capture), not to a free list the graph's later replays would race with.
  Tensor t = Tensor::empty({4}, DType::f32, kGpu);
  BlockCacheStats mid;
  (void)cache_stats(&mid);
  try {
    Graph g = Graph::capture(st, [&] { t = Tensor(); });
  } catch (const Error&) {
  }
  if (on) {
    BlockCacheStats after;
    REQUIRE(cache_stats(&after));
    CHECK(after.cached_blocks == mid.cached_blocks);
    CHECK(after.owned_blocks + 1 == mid.owned_blocks);
  }
  // Afterwards the cache serves eager calls and the stream records again.
  const Tensor y = Tensor::full({4}, 1.0, DType::f32, kGpu);
  add_out(y, y, y, opt);
  Graph h = Graph::capture(st, [&] { add_out(y, y, y, opt); });
  h.replay(st);
  st.synchronize();
  for (float v : y.to_vector<float>()) CHECK(v == 4.0f);
}

TEST_CASE("cuda block cache: an allocation the pool cannot serve empties the cache first",
          "[cuda][block_cache][errors]") {
  for (std::int64_t n : kSizes) (void)Tensor::empty({n}, DType::f32, kGpu);
  BlockCacheStats before;
  if (!cache_on(&before)) return;  // off, as cache_on checked: the default run has it on
  REQUIRE(before.cached_blocks > 0);
  const std::int64_t huge = std::int64_t(1) << 48;
  CORE_REQUIRE_ERROR(Tensor::empty({huge}, DType::f32, kGpu), "cuda.allocate",
                     std::to_string(huge * 4));
  BlockCacheStats after;
  REQUIRE(cache_stats(&after));
  CHECK(after.cached_blocks == 0);
  CHECK(after.cached_bytes == 0);
  // The device still allocates and computes.
  const Tensor a = Tensor::full({1000}, 2.0, DType::f32, kGpu);
  for (float v : add(a, a).to_vector<float>()) REQUIRE(v == 4.0f);
  (void)cuda::block_cache_trim_for_test(0);
}

// The cases above, and the pool, graph and concurrency suites, with the
// cache off (read once per process, so in a child process).
TEST_CASE("cuda block cache: the suites again with the cache off", "[cuda][block_cache_off]") {
  strata_test::rerun_with_env("STRATA_CUDA_BLOCK_CACHE", "0",
                              "[block_cache],[pool],[graph],[concurrency]",
                              "strata_block_cache_off.log");
}
