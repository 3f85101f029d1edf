// One training step (forward, fused loss, backward, clipping, AdamW) on the
// cpu backend, f32, random tokens (bench/bench_train.hpp says what is timed
// and how flops are counted):
//   small/llama, small/gpt2  4 layers, d 256, 4 heads, vocabulary 256, T 256,
//                            B 8 (the Llama style with 2 KV heads)
//   llama17m                 the benchmark model (6 layers, d 512, 8/2 heads,
//                            SwiGLU 1408, vocabulary 256), T 512, B 4
// The last argument is the OpenMP thread count (1, 2 and, where there are
// more, all of them). bench/peer_train.py --device cpu times PyTorch eager
// on the same steps.
//
//   OMP_PROC_BIND=close bench_train_cpu --benchmark_filter=/2/
//     --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//     [--peak_tflops=X]
#include <benchmark/benchmark.h>
#include <omp.h>

#include <string>
#include <vector>

#include "bench_main.hpp"
#include "bench_train.hpp"

namespace {

using strata::Device;
using strata::DType;
namespace nn = strata::nn;
namespace sb = strata::bench;

void bm_train(benchmark::State& st, nn::ModelConfig cfg, std::int64_t batch, std::int64_t seq) {
  omp_set_num_threads(static_cast<int>(st.range(0)));
  sb::TrainStep step(cfg, DType::f32, Device::cpu(), batch, seq, "cpu");
  step.run();  // warm-up: the optimizer's state, the first touch of every buffer
  for (auto _ : st) benchmark::DoNotOptimize(step.run());
  step.set_counters(st);
  step.time_phases(st, [] {});
}

void register_all() {
  const int max_threads = omp_get_max_threads();
  std::vector<int> threads = {1, 2};
  if (max_threads > 2) threads.push_back(max_threads);
  struct Case {
    const char* name;
    nn::ModelConfig cfg;
    std::int64_t batch, seq;
  };
  const Case cases[] = {
      {"train/small/llama", sb::small_model(nn::Arch::llama), 8, 256},
      {"train/small/gpt2", sb::small_model(nn::Arch::gpt2), 8, 256},
      {"train/llama17m", sb::model_config(nn::Arch::llama), 4, 512},
  };
  for (const Case& c : cases)
    for (int n : threads)
      benchmark::RegisterBenchmark(c.name, bm_train, c.cfg, c.batch, c.seq)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  sb::take_peak_flag(argc, argv);
  return strata_bench::run_benchmarks(argc, argv, register_all);
}
