// softmax_attention on the host: the cpu backend, the reference backend (small
// shapes only) and a plain Eigen f32 baseline (S = Q K^T, row softmax, S V,
// materialised) in one binary, f32, one head.
//
// Counters: FLOP/s counts 4 * M * N * d per head (Q K^T and P V, d == dv:
// the figure docs/log/cpu.md uses, halved for causal);
// bytes/s counts reading q, k, v and writing out once. Each benchmark's last
// argument is the thread count (OpenMP), so 1- and 2-thread rows sit side by
// side. Layout variants: "fused" slices q, k, v from one [N, 3 d] buffer
// (row stride 3 d), "kcol" stores K column-major ([d, N] transposed).
//
//   bench_attention_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   bench_attention_cpu --benchmark_filter=memory   (peak extra memory, M = N = 65536)
//
// "fma_peak" is the machine's own ceiling in the same minutes: a
// register-only loop of 12 independent FMA chains per thread (no memory
// traffic), in the instruction set the cpu backend's attention kernels run
// (AVX-512 when it chose them, else AVX2; counter vector_bits). On a shared VM whose neighbours
// move every rate by 20-40%, the attention rate over fma_peak of the same run is the figure that
// does not move with them. "read_peak" is the memory side's ceiling in the same way: the threads
// sum disjoint parts of a buffer the size of the decode shape's K and V (64 MiB, larger than the
// last-level cache), so 64 MiB / read_peak is the floor of that decode row.
#include <benchmark/benchmark.h>
#include <omp.h>
#include <sys/resource.h>

#include <Eigen/Core>
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <string>
#include <vector>

#include "bench_main.hpp"
#include "strata/attention.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using i64 = std::int64_t;

enum class Layout { contiguous, fused, kcol };

struct Inputs {
  Tensor q, k, v, out;
};

// q [M, d], k [N, d], v [N, d], out [M, d] (one head), in the given layout.
Inputs make_inputs(i64 M, i64 N, i64 d, Layout layout) {
  Inputs in;
  if (layout == Layout::fused) {
    // Self-attention style projection output: one row per token, q|k|v side by side.
    const i64 L = std::max(M, N);
    Tensor qkv = Tensor::randn({L, 3 * d}, 7);
    in.q = qkv.slice(0, 0, M).slice(1, 0, d);
    in.k = qkv.slice(0, 0, N).slice(1, d, 2 * d);
    in.v = qkv.slice(0, 0, N).slice(1, 2 * d, 3 * d);
  } else {
    in.q = Tensor::randn({M, d}, 1);
    in.k = layout == Layout::kcol ? Tensor::randn({d, N}, 2).transpose(0, 1)
                                  : Tensor::randn({N, d}, 2);
    in.v = Tensor::randn({N, d}, 3);
  }
  in.out = Tensor::empty({M, d});
  return in;
}

void set_counters(benchmark::State& st, i64 M, i64 N, i64 d, int threads) {
  const double flops = 4.0 * static_cast<double>(M) * static_cast<double>(N) * d;
  const double bytes = 4.0 * (2.0 * M * d + 2.0 * N * d);
  st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
}

void bm_backend(benchmark::State& st, std::string backend, Layout layout) {
  const i64 M = st.range(0), N = st.range(1), d = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  omp_set_num_threads(threads);
  Inputs in = make_inputs(M, N, d, layout);
  strata::AttentionOptions opt;
  opt.backend = backend;
  st.SetLabel(strata::softmax_attention_kernel(in.q, in.k, in.v, opt));
  for (auto _ : st) {
    strata::softmax_attention_out(in.out, in.q, in.k, in.v, opt);
    benchmark::DoNotOptimize(in.out.data_ptr());
    benchmark::ClobberMemory();
  }
  set_counters(st, M, N, d, threads);
}

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The baseline a user would write with Eigen: materialise S, softmax each
// row, multiply. Eigen's products use OpenMP threads where it was built with
// OpenMP; its vectorisation follows this binary's compile flags.
void bm_eigen_naive(benchmark::State& st) {
  const i64 M = st.range(0), N = st.range(1), d = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  omp_set_num_threads(threads);
  Eigen::setNbThreads(threads);
  const RowMat q = RowMat::Random(M, d), k = RowMat::Random(N, d), v = RowMat::Random(N, d);
  RowMat s(M, N), out(M, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (auto _ : st) {
    // Whole-matrix expressions, so Eigen vectorises the exp too.
    s.noalias() = q * k.transpose();
    s *= scale;
    const Eigen::VectorXf mx = s.rowwise().maxCoeff();
    s.colwise() -= mx;
    s.array() = s.array().exp();
    const Eigen::VectorXf sum = s.rowwise().sum();
    out.noalias() = s * v;
    out.array().colwise() /= sum.array();
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(st, M, N, d, threads);
}

// Peak resident memory the cpu backend adds on top of its inputs at
// M = N = 65536, d = 64 (inputs and output: 4 x 16 MiB). Run it on its own
// (--benchmark_filter=memory): ru_maxrss is a process-wide high-water mark.
void bm_memory(benchmark::State& st) {
  const i64 M = st.range(0), N = st.range(1), d = st.range(2);
  omp_set_num_threads(static_cast<int>(st.range(3)));
  Inputs in = make_inputs(M, N, d, Layout::contiguous);
  in.out.fill(0.0);  // touch every page before the baseline reading
  strata::AttentionOptions opt;
  opt.backend = "cpu";
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double before = static_cast<double>(ru.ru_maxrss);
  for (auto _ : st) {
    strata::softmax_attention_out(in.out, in.q, in.k, in.v, opt);
    benchmark::ClobberMemory();
  }
  getrusage(RUSAGE_SELF, &ru);
  st.counters["extra_MiB"] = (static_cast<double>(ru.ru_maxrss) - before) / 1024.0;
  set_counters(st, M, N, d, static_cast<int>(st.range(3)));
}

#if defined(__x86_64__)
// 12 chains hide the FMA latency (4 cycles) on two ports; 192 FLOP per step.
__attribute__((target("avx2,fma"))) float fma_chains(i64 steps) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(0.001f * float(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  // Without fast-math the compiler must run every FMA of every chain.
  for (i64 s = 0; s < steps; ++s)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 t = acc[0];
  for (int i = 1; i < 12; ++i) t = _mm256_add_ps(t, acc[i]);
  return _mm256_cvtss_f32(t);
}

// The same with 512-bit vectors: 384 FLOP per step. Used when the cpu
// backend's kernels run AVX-512, so the ceiling is that of the instructions
// attention runs (an AVX2 ceiling sat 38% under AVX-512 attention once).
__attribute__((target("avx512f"))) float fma_chains512(i64 steps) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * float(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (i64 s = 0; s < steps; ++s)
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 t = acc[0];
  for (int i = 1; i < 12; ++i) t = _mm512_add_ps(t, acc[i]);
  alignas(64) float lanes[16];  // _mm512_reduce_add_ps trips GCC 12's -Wuninitialized
  _mm512_store_ps(lanes, t);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

// True when the cpu backend chose its AVX-512 kernels (its description names the ISA).
bool cpu_runs_avx512() {
  const strata::BackendInfo* b = strata::Registry::get().backend("cpu");
  return b != nullptr && b->description.find("avx512") != std::string::npos;
}
#endif

void bm_fma_peak(benchmark::State& st) {
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    st.SkipWithError("no AVX2+FMA");
    return;
  }
  const int threads = static_cast<int>(st.range(0));
  constexpr i64 steps = i64(1) << 20;
  const bool wide = cpu_runs_avx512();
  volatile float sink = 0;
  for (auto _ : st) {
    float part = 0;
#pragma omp parallel num_threads(threads) reduction(+ : part)
    part += wide ? fma_chains512(steps) : fma_chains(steps);
    sink = sink + part;
  }
  st.counters["FLOP/s"] = benchmark::Counter((wide ? 384.0 : 192.0) * double(steps) * threads,
                                             benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
  st.counters["vector_bits"] = wide ? 512 : 256;
#else
  st.SkipWithError("x86-64 only");
#endif
}

void bm_read_peak(benchmark::State& st) {
  const int threads = static_cast<int>(st.range(0));
  const i64 n = st.range(1) / static_cast<i64>(sizeof(std::uint64_t));
  std::vector<std::uint64_t> buf(static_cast<std::size_t>(n), 1);
  volatile std::uint64_t sink = 0;
  for (auto _ : st) {
    std::uint64_t total = 0;  // integer sums vectorise without reassociation flags
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
    for (i64 i = 0; i < n; ++i) total += buf[static_cast<std::size_t>(i)];
    sink = sink + total;
  }
  st.counters["bytes/s"] = benchmark::Counter(double(n) * sizeof(std::uint64_t),
                                              benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
}

struct Shape {
  i64 M, N, d;
  bool reference;  // small enough for the reference backend
};

const Shape kShapes[] = {{1024, 1024, 64, true},
                         {4096, 4096, 64, false},
                         {2048, 2048, 128, false},
                         {1, 65536, 128, true},
                         {64, 16384, 128, false}};

int register_all() {
  const int maxt = omp_get_max_threads();
  std::vector<int> thread_counts{1};
  if (maxt > 1) thread_counts.push_back(maxt);
  for (const Shape& s : kShapes) {
    for (int t : thread_counts) {
      const std::vector<i64> args{s.M, s.N, s.d, t};
      strata_bench::register_wall_ms("cpu", bm_backend, std::string("cpu"), Layout::contiguous)
          ->Args(args);
      if (s.M > 1) {  // strided views; decode reads k, v once whatever the layout
        strata_bench::register_wall_ms("cpu_fused", bm_backend, std::string("cpu"), Layout::fused)
            ->Args(args);
        strata_bench::register_wall_ms("cpu_kcol", bm_backend, std::string("cpu"), Layout::kcol)
            ->Args(args);
      }
      strata_bench::register_wall_ms("eigen_naive", bm_eigen_naive)->Args(args);
      if (s.reference && t == maxt)
        strata_bench::register_wall_ms("reference", bm_backend, std::string("reference"),
                                       Layout::contiguous)
            ->Args(args);
    }
  }
  for (int t : thread_counts) {
    strata_bench::register_wall_ms("fma_peak", bm_fma_peak)->Arg(t);
    strata_bench::register_wall_ms("read_peak", bm_read_peak)->Args({t, i64(64) << 20});
  }
  strata_bench::register_wall_ms("memory", bm_memory)
      ->Args({65536, 65536, 64, maxt})
      ->Iterations(1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return strata_bench::run_benchmarks(argc, argv, register_all); }
