// matmul on the cpu backend against Eigen's own GEMM on the same buffers
// (row-major maps, C.noalias() = A * B), f32. Strata's cpu matmul is Eigen's
// GEMM through Eigen::Map, so the gap is what the front end, registry and
// layout dispatch cost; the target is within 10% of Eigen. Both sides use
// the same OpenMP threads (OMP_NUM_THREADS).
//
// Arguments M, K, N, wt: wt = 1 stores b as a linear weight [N, K] row-major
// and passes its transpose view (what nn::Linear does). The skinny shapes
// (M = 1 .. 16, a decode step) are where Strata cuts the product into one
// column slice per thread while Eigen's matrix-vector product runs on one
// thread: there Strata is expected to beat "Eigen direct" by about the
// thread count (memory bound: by the bandwidth the threads add).
//
//   bench_matmul_cpu [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdint>

#include "bench_main.hpp"
#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;

// b [K, N]: row-major, or (wt) the transpose view of a [N, K] weight.
struct Data {
  Tensor a, b, out;
  Data(std::int64_t M, std::int64_t K, std::int64_t N, bool wt)
      : a(Tensor::randn({M, K}, 1)),
        b(wt ? Tensor::randn({N, K}, 2).transpose(0, 1) : Tensor::randn({K, N}, 2)),
        out(Tensor::empty({M, N})) {}
};

void BM_strata(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Data d(M, K, N, st.range(3) != 0);
  strata::MatmulOptions o;
  o.backend = "cpu";
  for (auto _ : st) {
    strata::matmul_out(d.out, d.a, d.b, o);
    benchmark::DoNotOptimize(d.out.data_ptr());
    benchmark::ClobberMemory();
  }
  strata_bench::report_gemm_rate(st, 1, M, K, N);
}

void BM_eigen(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  const bool wt = st.range(3) != 0;
  Data d(M, K, N, wt);
  Eigen::Map<const RowMat> A(d.a.data<float>(), M, K);
  Eigen::Map<RowMat> C(d.out.data<float>(), M, N);
  auto run = [&](const auto& B) {
    for (auto _ : st) {
      C.noalias() = A * B;
      benchmark::DoNotOptimize(C.data());
      benchmark::ClobberMemory();
    }
  };
  const float* pb = d.b.data<float>();
  if (wt)
    run(Eigen::Map<const ColMat>(pb, K, N));
  else
    run(Eigen::Map<const RowMat>(pb, K, N));
  strata_bench::report_gemm_rate(st, 1, M, K, N);
}

}  // namespace

// Strata and Eigen registered in turn per shape, so that a drift of the
// shared machine's speed hits both sides alike.
int main(int argc, char** argv) {
  // M, K, N, wt. The model shapes are those of docs/guide/models.md's benchmark
  // model (d_model 512, SwiGLU hidden 1408): decode rows 1 (batch 1), 4 and
  // 16, and a 512-token prefill; then a 64 MiB weight (the model's weights
  // together are 69 MB), which no cache holds between iterations, as in a
  // decode step.
  const std::int64_t shapes[][4] = {{256, 256, 256, 0}, {512, 512, 512, 0}, {1024, 1024, 1024, 0},
                                    {1, 512, 1536, 0},  {1, 512, 1408, 1},  {1, 1408, 512, 1},
                                    {4, 512, 1408, 1},  {16, 512, 1408, 1}, {512, 512, 1408, 1},
                                    {1, 512, 32768, 1}, {8, 512, 32768, 1}};
  for (const auto& s : shapes) {
    benchmark::RegisterBenchmark("strata_matmul_cpu", BM_strata)
        ->Args({s[0], s[1], s[2], s[3]})
        ->UseRealTime()
        ->MinTime(0.3);
    benchmark::RegisterBenchmark("eigen_gemm", BM_eigen)
        ->Args({s[0], s[1], s[2], s[3]})
        ->UseRealTime()
        ->MinTime(0.3);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
