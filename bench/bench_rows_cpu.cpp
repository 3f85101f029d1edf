// Row ops on the cpu backend: layer_norm, rms_norm and softmax over the
// last dim of a 4096 x 4096 f32 tensor (64 MiB in, 64 MiB out: larger than
// the last-level cache), contiguous, written into a preallocated out; and
// cross_entropy's forward and backward through the tape (mean over 512 rows
// of a GPT-2 sized vocabulary, 50304: 98 MiB of logits and as much of
// gradient), counted as reading the logits twice and the gradient once
// (added into) and writing it.
//
// Counters: bytes/s counts reading x and writing out once (plus weight and
// bias, negligible); elements/s the rows times the row length. Each
// benchmark's last argument is the OpenMP thread count, so 1-thread and
// all-thread rows sit side by side.
//
//   bench_rows_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <string>

#include "bench_main.hpp"
#include "strata/autograd.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using i64 = std::int64_t;

enum class Op { layer_norm, rms_norm, softmax };

void bm_row_op(benchmark::State& st, Op op) {
  const i64 rows = st.range(0), n = st.range(1);
  const int threads = static_cast<int>(st.range(2));
  omp_set_num_threads(threads);
  const Tensor x = Tensor::randn({rows, n}, 1);
  const Tensor w = Tensor::randn({n}, 2), b = Tensor::randn({n}, 3);
  const Tensor out = Tensor::empty({rows, n});
  strata::OpOptions opt;
  opt.backend = "cpu";
  for (auto _ : st) {
    switch (op) {
      case Op::layer_norm:
        strata::layer_norm_out(out, x, w, b, 1e-5, opt);
        break;
      case Op::rms_norm:
        strata::rms_norm_out(out, x, w, 1e-6, opt);
        break;
      case Op::softmax:
        strata::softmax_out(out, x, -1, opt);
        break;
    }
    benchmark::DoNotOptimize(out.data_ptr());
    benchmark::ClobberMemory();
  }
  const double elems = static_cast<double>(rows * n);
  st.counters["bytes/s"] = benchmark::Counter(2.0 * elems * sizeof(float),
                                              benchmark::Counter::kIsIterationInvariantRate);
  st.counters["elements/s"] =
      benchmark::Counter(elems, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
}

// loss = cross_entropy(x, t) (mean), then its backward into gx (added
// every iteration, as a gradient accumulates across steps).
void bm_cross_entropy(benchmark::State& st) {
  const i64 rows = st.range(0), n = st.range(1);
  const int threads = static_cast<int>(st.range(2));
  omp_set_num_threads(threads);
  const Tensor x = Tensor::randn({rows, n}, 1);
  const Tensor gx = Tensor::zeros({rows, n});
  const Tensor t = Tensor::arange(rows, strata::DType::i64);  // targets 0 .. rows - 1 (< n)
  strata::OpOptions opt;
  opt.backend = "cpu";
  for (auto _ : st) {
    strata::autograd::Tape tape;
    tape.watch(x, gx);
    tape.backward(strata::cross_entropy(x, t, {}, opt), {}, opt);
    benchmark::DoNotOptimize(gx.data_ptr());
    benchmark::ClobberMemory();
  }
  const double elems = static_cast<double>(rows * n);
  st.counters["bytes/s"] = benchmark::Counter(4.0 * elems * sizeof(float),
                                              benchmark::Counter::kIsIterationInvariantRate);
  st.counters["elements/s"] =
      benchmark::Counter(elems, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = threads;
}

void register_all() {
  const int maxt = omp_get_max_threads();
  const struct {
    const char* name;
    Op op;
  } ops[] = {{"layer_norm", Op::layer_norm}, {"rms_norm", Op::rms_norm}, {"softmax", Op::softmax}};
  for (const auto& o : ops) {
    auto* b = benchmark::RegisterBenchmark((std::string(o.name) + "/f32").c_str(), bm_row_op, o.op);
    b->Args({4096, 4096, 1});
    if (maxt > 1) b->Args({4096, 4096, maxt});
    b->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  auto* ce = benchmark::RegisterBenchmark("cross_entropy_fwd_bwd/f32", bm_cross_entropy);
  ce->Args({512, 50304, 1});
  if (maxt > 1) ce->Args({512, 50304, maxt});
  ce->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) { return strata_bench::run_benchmarks(argc, argv, register_all); }
