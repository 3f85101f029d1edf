// The benchmark model of docs/guide/models.md on the cpu backend: Llama style, 6
// layers, d_model 512, 8 heads, 2 KV heads, SwiGLU hidden 1408, vocabulary
// 256 (17.2M parameters), random weights; and the same size in GPT-2 style
// (8 KV heads, GELU MLP of 2048, learned positions, tied head).
//   decode:  one token at position 512, batch 1 (the cache is truncated back
//            to 512 after each step, so every step sees 512 earlier keys);
//   prefill: 512 tokens from an empty cache.
// The last argument is the OpenMP thread count.
//
//   OMP_PROC_BIND=close bench_model_cpu --benchmark_repetitions=5
//     --benchmark_report_aggregates_only=true   (one line)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <vector>

#include "bench_model_config.hpp"
#include "strata/nn/decoder.hpp"

namespace {

using strata::DType;
using strata::Tensor;
using namespace strata::nn;
using i64 = std::int64_t;

DecoderLM bench_model(Arch arch) {
  DecoderLM m(strata::bench::model_config(arch));
  init_normal(m, 1, 0.02);
  m.options().backend = "cpu";
  return m;
}

Tensor random_ids(i64 t) {
  std::vector<i64> ids(static_cast<std::size_t>(t));
  for (i64 i = 0; i < t; ++i) ids[static_cast<std::size_t>(i)] = (i * 131 + 7) % 256;
  return Tensor::from_vector(ids, {1, t});
}

void bm_decode(benchmark::State& st, Arch arch) {
  omp_set_num_threads(static_cast<int>(st.range(0)));
  DecoderLM m = bench_model(arch);
  const i64 pos = 512;
  KVCache cache = m.make_cache(1, pos + 1);
  m.forward(random_ids(pos), &cache);
  const Tensor step = random_ids(1);
  const Tensor logits = Tensor::empty({1, 1, 256});
  m.forward_out(logits, step, &cache);  // warm-up: the (1, 1) workspace
  for (auto _ : st) {
    cache.truncate(pos);
    m.forward_out(logits, step, &cache);
    benchmark::DoNotOptimize(logits.data_ptr());
  }
  st.counters["tokens/s"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["params"] = static_cast<double>(m.num_parameters());
}

void bm_prefill(benchmark::State& st, Arch arch) {
  omp_set_num_threads(static_cast<int>(st.range(0)));
  DecoderLM m = bench_model(arch);
  const i64 t = 512;
  KVCache cache = m.make_cache(1, t);
  const Tensor ids = random_ids(t);
  const Tensor logits = Tensor::empty({1, t, 256});
  m.forward_out(logits, ids, &cache);  // warm-up
  for (auto _ : st) {
    cache.reset();
    m.forward_out(logits, ids, &cache);
    benchmark::DoNotOptimize(logits.data_ptr());
  }
  st.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(t), benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  const int max_threads = omp_get_max_threads();
  std::vector<int> threads = {1, 2};
  if (max_threads > 2) threads.push_back(max_threads);
  for (auto [arch, name] : {std::pair{Arch::llama, "llama"}, std::pair{Arch::gpt2, "gpt2"}}) {
    for (int n : threads) {
      benchmark::RegisterBenchmark((std::string("decode_pos512/") + name).c_str(), bm_decode, arch)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark((std::string("prefill_512/") + name).c_str(), bm_prefill, arch)
          ->Arg(n)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
