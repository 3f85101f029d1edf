// softmax_attention's backward on the host, f32, [B, H, L, d] contiguous:
// "fwd" times the forward alone, "fwd_bwd" the forward under a tape plus
// Tape::backward (what a training step pays), so the backward is their
// difference. bench/cpu_peer_attention_backward.py runs PyTorch's CPU
// scaled_dot_product_attention on the same shapes and threads.
//
// Counters: FLOP/s of fwd_bwd counts the forward (4 B H L^2 d) and the
// backward at 2.5 times the forward (FlashAttention's convention), halved
// for causal. The last argument is the thread count (OpenMP).
//
//   bench_attention_backward_cpu --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <vector>

#include "bench_main.hpp"
#include "strata/attention.hpp"
#include "strata/autograd.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Tensor;
using i64 = std::int64_t;

struct Inputs {
  Tensor q, k, v, g;
};

Inputs make_inputs(i64 B, i64 H, i64 L, i64 d) {
  return {Tensor::randn({B, H, L, d}, 1), Tensor::randn({B, H, L, d}, 2),
          Tensor::randn({B, H, L, d}, 3), Tensor::randn({B, H, L, d}, 4)};
}

strata::AttentionOptions options(bool causal) {
  strata::AttentionOptions o;
  o.causal = causal ? strata::Causal::bottom_right : strata::Causal::none;
  o.backend = "cpu";
  return o;
}

double forward_flop(const benchmark::State& st) {
  const double B = static_cast<double>(st.range(0)), H = static_cast<double>(st.range(1)),
               L = static_cast<double>(st.range(2)), d = static_cast<double>(st.range(3));
  return 4 * B * H * L * L * d * (st.range(4) != 0 ? 0.5 : 1.0);
}

// args: B, H, L, d, causal, threads
void bm_forward(benchmark::State& st) {
  omp_set_num_threads(static_cast<int>(st.range(5)));
  const Inputs in = make_inputs(st.range(0), st.range(1), st.range(2), st.range(3));
  const strata::AttentionOptions o = options(st.range(4) != 0);
  for (auto _ : st) benchmark::DoNotOptimize(strata::softmax_attention(in.q, in.k, in.v, o));
  st.counters["FLOP/s"] = benchmark::Counter(forward_flop(st), benchmark::Counter::kIsRate);
}

void bm_forward_backward(benchmark::State& st) {
  omp_set_num_threads(static_cast<int>(st.range(5)));
  const Inputs in = make_inputs(st.range(0), st.range(1), st.range(2), st.range(3));
  const strata::AttentionOptions o = options(st.range(4) != 0);
  strata::OpOptions oo;
  oo.backend = "cpu";
  Tensor gq = Tensor::zeros(in.q.shape()), gk = Tensor::zeros(in.k.shape()),
         gv = Tensor::zeros(in.v.shape());
  for (auto _ : st) {
    strata::autograd::Tape tape;
    tape.watch(in.q, gq);
    tape.watch(in.k, gk);
    tape.watch(in.v, gv);
    tape.backward(strata::softmax_attention(in.q, in.k, in.v, o), in.g, oo);
    benchmark::DoNotOptimize(gq.data_ptr());
  }
  st.counters["FLOP/s"] = benchmark::Counter(3.5 * forward_flop(st), benchmark::Counter::kIsRate);
}

int register_all() {
  const int maxt = omp_get_max_threads();
  const std::vector<std::vector<i64>> shapes = {
      {1, 4, 1024, 64}, {1, 8, 2048, 64}, {1, 4, 1024, 128}};
  for (const auto& s : shapes) {
    for (i64 causal : {0, 1}) {
      std::vector<i64> args = s;
      args.push_back(causal);
      args.push_back(maxt);
      strata_bench::register_wall_ms("fwd", bm_forward)->Args(args);
      strata_bench::register_wall_ms("fwd_bwd", bm_forward_backward)->Args(args);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return strata_bench::run_benchmarks(argc, argv, register_all); }
