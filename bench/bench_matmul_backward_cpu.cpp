// A linear layer's forward and backward on the cpu backend, under a tape,
// against the same three products written with Eigen directly, f32:
//
//   y = x W^T        dx = dy W        dW += dy^T x
//
// x [M, K], W [N, K] (a linear weight), dy [M, N]. Strata's side records the
// forward on a tape and runs backward(y, dy), its gradients added into
// caller-owned buffers (watch(t, grad)), as gradient accumulation does.
// Eigen's side runs the three GEMMs on the same buffers. The gap is what the
// tape, the registry and the layout dispatch cost; the target is within 10%
// of Eigen (docs/guide/autograd.md). Both use the same OpenMP threads.
//
//   bench_matmul_backward_cpu [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdint>

#include "bench_main.hpp"
#include "strata/autograd.hpp"
#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Data {
  Tensor x, w, dy, y, gx, gw;
  Data(std::int64_t M, std::int64_t K, std::int64_t N)
      : x(Tensor::randn({M, K}, 1)),
        w(Tensor::randn({N, K}, 2)),
        dy(Tensor::randn({M, N}, 3)),
        y(Tensor::empty({M, N})),
        gx(Tensor::zeros({M, K})),
        gw(Tensor::zeros({N, K})) {}
};

void BM_strata(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Data d(M, K, N);
  strata::MatmulOptions o;
  o.backend = "cpu";
  for (auto _ : st) {
    strata::autograd::Tape tape;
    tape.watch(d.x, d.gx);
    tape.watch(d.w, d.gw);
    Tensor y = strata::linear(d.x, d.w, Tensor(), o);
    tape.backward(y, d.dy, o);
    benchmark::DoNotOptimize(d.gw.data_ptr());
    benchmark::ClobberMemory();
  }
  strata_bench::report_gemm_rate(st, 3, M, K, N);  // y, gx, gw
}

void BM_eigen(benchmark::State& st) {
  const std::int64_t M = st.range(0), K = st.range(1), N = st.range(2);
  Data d(M, K, N);
  Eigen::Map<const RowMat> X(d.x.data<float>(), M, K), W(d.w.data<float>(), N, K);
  Eigen::Map<const RowMat> dY(d.dy.data<float>(), M, N);
  Eigen::Map<RowMat> Y(d.y.data<float>(), M, N), gX(d.gx.data<float>(), M, K),
      gW(d.gw.data<float>(), N, K);
  for (auto _ : st) {
    Y.noalias() = X * W.transpose();
    gX.noalias() += dY * W;
    gW.noalias() += dY.transpose() * X;
    benchmark::DoNotOptimize(gW.data());
    benchmark::ClobberMemory();
  }
  strata_bench::report_gemm_rate(st, 3, M, K, N);  // y, gx, gw
}

}  // namespace

// Strata and Eigen registered in turn per shape, so that a drift of the
// shared machine's speed hits both sides alike. Shapes: square products, and
// the benchmark model's MLP (d_model 512, hidden 1408) over 512 tokens.
int main(int argc, char** argv) {
  return strata_bench::run_benchmarks(argc, argv, [] {
    const std::int64_t shapes[][3] = {
        {256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {512, 512, 1408}, {512, 1408, 512}};
    for (const auto& s : shapes) {
      benchmark::RegisterBenchmark("strata_linear_fwd_bwd", BM_strata)
          ->Args({s[0], s[1], s[2]})
          ->UseRealTime()
          ->MinTime(0.3);
      benchmark::RegisterBenchmark("eigen_three_gemms", BM_eigen)
          ->Args({s[0], s[1], s[2]})
          ->UseRealTime()
          ->MinTime(0.3);
    }
  });
}
