// matmul on the cpu backend against Eigen's own GEMM on the same buffers
// (row-major maps, C.noalias() = A * B), f32. Strata's cpu matmul is Eigen's
// GEMM through Eigen::Map, so the gap is what the front end, registry and
// layout dispatch cost; the target is within 10% of Eigen. Both sides use
// the same OpenMP threads (OMP_NUM_THREADS).
//
//   bench_matmul_cpu [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdint>

#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Data {
  Tensor a, b, out;
  Data(std::int64_t M, std::int64_t K, std::int64_t N)
      : a(Tensor::randn({M, K}, 1)), b(Tensor::randn({K, N}, 2)), out(Tensor::empty({M, N})) {}
};

void report(benchmark::State& st, std::int64_t M, std::int64_t K, std::int64_t N) {
  st.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(M) * double(N) * double(K) * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

void BM_strata(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Data d(M, K, N);
  strata::MatmulOptions o;
  o.backend = "cpu";
  for (auto _ : st) {
    strata::matmul_out(d.out, d.a, d.b, o);
    benchmark::DoNotOptimize(d.out.data_ptr());
    benchmark::ClobberMemory();
  }
  report(st, M, K, N);
}

void BM_eigen(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Data d(M, K, N);
  Eigen::Map<const RowMat> A(d.a.data<float>(), M, K);
  Eigen::Map<const RowMat> B(d.b.data<float>(), K, N);
  Eigen::Map<RowMat> C(d.out.data<float>(), M, N);
  for (auto _ : st) {
    C.noalias() = A * B;
    benchmark::DoNotOptimize(C.data());
    benchmark::ClobberMemory();
  }
  report(st, M, K, N);
}

}  // namespace

// Strata and Eigen registered in turn per shape, so that a drift of the
// shared machine's speed hits both sides alike.
int main(int argc, char** argv) {
  const std::int64_t shapes[][3] = {{256, 256, 256},
                                    {512, 512, 512},
                                    {1024, 1024, 1024},
                                    {1, 512, 1536}};  // the last: decode-like, one row
  for (const auto& s : shapes) {
    benchmark::RegisterBenchmark("strata_matmul_cpu", BM_strata)
        ->Args({s[0], s[1], s[2]})
        ->UseRealTime()
        ->MinTime(0.3);
    benchmark::RegisterBenchmark("eigen_gemm", BM_eigen)
        ->Args({s[0], s[1], s[2]})
        ->UseRealTime()
        ->MinTime(0.3);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
