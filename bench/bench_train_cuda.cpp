// One training step (forward, fused loss, backward, clipping, AdamW) on the
// cuda backend, random tokens (bench/bench_train.hpp says what is timed and
// how flops are counted):
//   gpt2_124m  GPT-2 124M: 12 layers, d 768, 12 heads, vocabulary 50304,
//              T 1024, B 8 and 16
//   llama17m   the benchmark model (6 layers, d 512, 8/2 heads, SwiGLU 1408,
//              vocabulary 256), T 512, B 32
// each in f32 (f32 matmuls at full precision, no TF32) and bf16 (bf16
// parameters, activations and gradients; nn::AdamW keeps f32 masters and
// f32 state). Wall-clock per step until the GPU is done (manual time).
// MFU against the H200's dense peak unless --peak_tflops / STRATA_PEAK_TFLOPS
// says otherwise: 989 TFLOP/s bf16 (tensor cores), 67 TFLOP/s f32 (the
// non-tensor FP32 rate). Counter peak_mem_GiB: the high-water mark of the
// device's memory pool over the timed steps (parameters, gradients,
// optimizer state and activations; what torch.cuda.max_memory_allocated
// counts for PyTorch). bench/peer_train.py --strata FILE prints PyTorch's
// eager and compiled steps beside these.
//
//   bench_train_cuda --benchmark_out=train_cuda.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "bench_main.hpp"
#include "bench_train.hpp"

namespace {

using strata::Device;
using strata::DType;
namespace nn = strata::nn;
namespace sb = strata::bench;

cudaMemPool_t pool() {
  cudaMemPool_t p = nullptr;
  cudaDeviceGetDefaultMemPool(&p, 0);
  return p;
}

void bm_train(benchmark::State& st, bool gpt2, bool bf16, std::int64_t batch) {
  const std::int64_t seq = gpt2 ? 1024 : 512;
  const double given = sb::peak_tflops();
  if (given <= 0) sb::peak_tflops() = bf16 ? 989.0 : 67.0;
  const nn::ModelConfig cfg = gpt2 ? sb::gpt2_124m() : sb::model_config(nn::Arch::llama);
  sb::TrainStep step(cfg, bf16 ? DType::bf16 : DType::f32, Device::cuda(0), batch, seq, "auto");
  for (int i = 0; i < 3; ++i) step.run();  // the optimizer's state, the pool's blocks
  cudaDeviceSynchronize();
  std::uint64_t zero = 0;
  cudaMemPoolSetAttribute(pool(), cudaMemPoolAttrUsedMemHigh, &zero);
  for (auto _ : st) {
    const auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(step.run());
    cudaDeviceSynchronize();
    st.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::uint64_t high = 0;
  cudaMemPoolGetAttribute(pool(), cudaMemPoolAttrUsedMemHigh, &high);
  step.set_counters(st);
  step.time_phases(st, [] { cudaDeviceSynchronize(); });
  st.counters["peak_mem_GiB"] = static_cast<double>(high) / (1024.0 * 1024.0 * 1024.0);
  sb::peak_tflops() = given;
}

// Names train/<model>/<dtype>/B<batch> (bench/peer_train.py reads them).
void register_all() {
  struct Case {
    bool gpt2, bf16;
    std::int64_t batch;
  };
  const Case cases[] = {
      {false, true, 32}, {false, false, 32}, {true, true, 16}, {true, true, 8}, {true, false, 8}};
  for (const Case& c : cases) {
    const std::string name = std::string("train/") + (c.gpt2 ? "gpt2_124m" : "llama17m") +
                             (c.bf16 ? "/bf16/B" : "/f32/B") + std::to_string(c.batch);
    benchmark::RegisterBenchmark(name.c_str(), bm_train, c.gpt2, c.bf16, c.batch)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond)
        ->MinTime(1.0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  sb::take_peak_flag(argc, argv);
  return strata_bench::run_benchmarks(argc, argv, register_all);
}
