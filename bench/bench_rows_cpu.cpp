// Row ops on the cpu backend: layer_norm, rms_norm and softmax over the
// last dim of a 4096 x 4096 f32 tensor (64 MiB in, 64 MiB out: larger than
// the last-level cache), contiguous, written into a preallocated out; and
// cross_entropy's forward and backward through the tape (mean over 512 rows
// of a GPT-2 sized vocabulary, 50304: 98 MiB of logits and as much of
// gradient), counted as reading the logits twice and the gradient once
// (added into) and writing it; and the row ops' backward kernels
// (softmax_backward: grad and y in, dx out; layer_norm_backward: grad and x
// in, dx, dweight and dbias out; rms_norm_backward: dx and dweight).
//
// Counters: bytes/s counts reading every [rows, n] input and writing the
// [rows, n] output once (weight, bias and their gradients, [n], are
// negligible); elements/s the rows times the row length. Each
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

enum class Op {
  layer_norm,
  rms_norm,
  softmax,
  softmax_backward,
  layer_norm_backward,
  rms_norm_backward
};

void bm_row_op(benchmark::State& st, Op op) {
  const i64 rows = st.range(0), n = st.range(1);
  const int threads = static_cast<int>(st.range(2));
  omp_set_num_threads(threads);
  const Tensor x = Tensor::randn({rows, n}, 1);
  const Tensor w = Tensor::randn({n}, 2), b = Tensor::randn({n}, 3);
  const Tensor out = Tensor::empty({rows, n});
  const Tensor g = Tensor::randn({rows, n}, 4), y = strata::softmax(x, -1);
  const Tensor dw = Tensor::empty({n}), db = Tensor::empty({n});
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
      case Op::softmax_backward:
        strata::softmax_backward_out(out, g, y, -1, opt);
        break;
      case Op::layer_norm_backward:
        strata::layer_norm_backward_out(out, dw, db, g, x, w, 1e-5, opt);
        break;
      case Op::rms_norm_backward:
        strata::rms_norm_backward_out(out, dw, g, x, w, 1e-6, opt);
        break;
    }
    benchmark::DoNotOptimize(out.data_ptr());
    benchmark::ClobberMemory();
  }
  const double elems = static_cast<double>(rows * n);
  const double tensors = op == Op::layer_norm || op == Op::rms_norm || op == Op::softmax ? 2 : 3;
  st.counters["bytes/s"] = benchmark::Counter(tensors * elems * sizeof(float),
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
  } ops[] = {{"layer_norm", Op::layer_norm},
             {"rms_norm", Op::rms_norm},
             {"softmax", Op::softmax},
             {"softmax_backward", Op::softmax_backward},
             {"layer_norm_backward", Op::layer_norm_backward},
             {"rms_norm_backward", Op::rms_norm_backward}};
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
