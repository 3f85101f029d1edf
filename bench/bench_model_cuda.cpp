// The benchmark model of docs/guide/models.md on the cuda backend: Llama style, 6
// layers, d 512, 8 heads, 2 KV heads, SwiGLU 1408, vocabulary 256 (17.2M
// parameters), random weights. Decode: one token per step at position 512
// (the cache is rewound to 512 before each step), batch 1 and 16; prefill:
// 512 tokens. Wall-clock per call including the final synchronisation
// (manual time), as a user waiting for logits sees it. The GPT-2 style model
// of the same size is reported beside it. bench/peer_model.py times PyTorch
// on the same models.
//
//   bench_model_cuda --benchmark_out=model_cuda.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench_model_config.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/module.hpp"

namespace {

using strata::Device;
using strata::DType;
using strata::Tensor;
namespace nn = strata::nn;

void sync() { cudaDeviceSynchronize(); }

double seconds_of(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// warmup untimed calls of run, then one a benchmark iteration, each timed
// until the GPU has finished it.
template <class Run>
void time_on_gpu(benchmark::State& st, int warmup, const Run& run) {
  for (int i = 0; i < warmup; ++i) run();
  sync();
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    sync();
    st.SetIterationTime(seconds_of(t0));
  }
}

// args: arch (0 llama, 1 gpt2), dtype (0 f32, 1 bf16), batch, graph (1:
// replayed CUDA graph, the default; 0: every op launched eagerly). The ids
// of a step come from the host, as a sampler's do.
void BM_decode(benchmark::State& st) {
  const auto arch = st.range(0) == 0 ? nn::Arch::llama : nn::Arch::gpt2;
  const DType dt = st.range(1) == 0 ? DType::f32 : DType::bf16;
  const std::int64_t B = st.range(2), pos = 512;
  nn::DecoderLM m(strata::bench::model_config(arch), dt, Device::cuda(0));
  nn::init_normal(m, 1, 0.02);
  m.graphs(st.range(3) != 0);
  nn::KVCache cache = m.make_cache(B, pos + 8);
  m.forward(Tensor::zeros({B, pos}, DType::i64, Device::cuda(0)), &cache);
  const Tensor ids = Tensor::zeros({B, 1}, DType::i64);
  const Tensor logits = Tensor::empty({B, 1, 256}, DType::f32, Device::cuda(0));
  auto step = [&] {
    cache.reset();
    cache.advance(pos);
    m.forward_out(logits, ids, &cache);
  };
  time_on_gpu(st, 5, step);
  st.counters["graphs_recorded"] = static_cast<double>(m.graph_captures());
  st.counters["params_M"] = static_cast<double>(m.num_parameters()) / 1e6;
}

void BM_prefill(benchmark::State& st) {
  const auto arch = st.range(0) == 0 ? nn::Arch::llama : nn::Arch::gpt2;
  const DType dt = st.range(1) == 0 ? DType::f32 : DType::bf16;
  const std::int64_t T = 512;
  nn::DecoderLM m(strata::bench::model_config(arch), dt, Device::cuda(0));
  nn::init_normal(m, 1, 0.02);
  nn::KVCache cache = m.make_cache(1, T);
  const Tensor ids = Tensor::zeros({1, T}, DType::i64, Device::cuda(0));
  const Tensor logits = Tensor::empty({1, T, 256}, DType::f32, Device::cuda(0));
  auto run = [&] {
    cache.reset();
    m.forward_out(logits, ids, &cache);
  };
  time_on_gpu(st, 3, run);
  st.counters["tok_per_s"] =
      benchmark::Counter(static_cast<double>(T), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(BM_decode)
    ->ArgNames({"gpt2", "bf16", "B", "graph"})
    ->Args({0, 0, 1, 1})
    ->Args({0, 1, 1, 1})
    ->Args({0, 1, 16, 1})
    ->Args({0, 0, 16, 1})
    ->Args({1, 0, 1, 1})
    ->Args({1, 1, 1, 1})
    ->Args({0, 0, 1, 0})
    ->Args({0, 1, 1, 0})
    ->Args({0, 1, 16, 0})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK(BM_prefill)
    ->ArgNames({"gpt2", "bf16"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK_MAIN();
