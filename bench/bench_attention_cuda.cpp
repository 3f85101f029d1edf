// softmax_attention on the cuda backend, timed with CUDA events after
// warm-up (Google Benchmark manual time). Each shape reports TFLOP/s
// (4*M*N*d per head for d == dv, halved for causal) and GB/s (q, k, v read
// once, out written once). The *_fwd_bwd shapes time the forward under a
// tape plus Tape::backward (a training step's attention) and count the
// backward at 2.5 times the forward (FlashAttention's convention), 3.5 in
// all; the backward alone is their time less the forward shape's. bench/peer_attention.py runs the
// same shapes through PyTorch and reads this binary's JSON output.
//
//   bench_attention_cuda --benchmark_out=cuda.json --benchmark_out_format=json
//   STRATA_CUDA_VARIANT=<name> forces a kernel variant (tuning);
//   STRATA_FLASH_VARIANT=<name> a bf16/f16 or TF32 configuration;
//   --benchmark_filter=bf16_ times the bf16 shapes only, f32high_ / f32medium_
//   the f32 precision high / medium ones.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "strata/attention.hpp"
#include "strata/autograd.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Device;
using strata::DType;
using strata::Tensor;

struct Shape {
  const char* name;
  std::int64_t B, H, M, N, d;
  bool causal = false;
  bool fused = false;  // q, k, v sliced out of one [B, L, 3, H, d] buffer
  bool two_d = false;  // q [M, d] (no batch, no head dim)
  DType dt = DType::f32;
  bool kt = false;  // k stored column-major ([d, N] transposed)
  strata::Precision precision = strata::Precision::highest;  // f32 only
  bool fwd_bwd = false;  // forward and backward (softmax_attention_backward's kernel)
};

constexpr strata::Precision kHigh = strata::Precision::high;
constexpr strata::Precision kMedium = strata::Precision::medium;

// Kept in step with SHAPES in bench/peer_attention.py.
const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {"single_1024_d64", 1, 1, 1024, 1024, 64, false, false, true},
      {"single_4096_d64", 1, 1, 4096, 4096, 64, false, false, true},
      {"single_8192_d128", 1, 1, 8192, 8192, 128, false, false, true},
      {"single_4096_d100", 1, 1, 4096, 4096, 100, false, false, true},
      {"single_4096_d128", 1, 1, 4096, 4096, 128, false, false, true},
      {"decode_262144_d128", 1, 1, 1, 262144, 128, false, false, true},
      {"decode_b8h32_32768_d128", 8, 32, 1, 32768, 128},
      {"b4h16_4096_d64", 4, 16, 4096, 4096, 64},
      {"b4h16_4096_d64_causal", 4, 16, 4096, 4096, 64, true},
      {"b4h16_4096_d64_fused", 4, 16, 4096, 4096, 64, false, true},
      {"b1h32_8192_d128", 1, 32, 8192, 8192, 128},
      {"b1h32_8192_d128_causal", 1, 32, 8192, 8192, 128, true},
      {"b1h32_8192_d128_fused", 1, 32, 8192, 8192, 128, false, true},
      {"single_4096_d64_kt", 1, 1, 4096, 4096, 64, false, false, true, DType::f32, true},
      {"f64_single_2048_d64", 1, 1, 2048, 2048, 64, false, false, true, DType::f64},
      {"f64_b4h16_2048_d64", 4, 16, 2048, 2048, 64, false, false, false, DType::f64},
      {"f64_single_4096_d128", 1, 1, 4096, 4096, 128, false, false, true, DType::f64},
      // bf16/f16: the tensor-core kernel (backends/cuda/attention/sm80, sm90).
      {"bf16_single_4096_d64", 1, 1, 4096, 4096, 64, false, false, true, DType::bf16},
      {"bf16_single_8192_d128", 1, 1, 8192, 8192, 128, false, false, true, DType::bf16},
      {"bf16_single_4096_d100", 1, 1, 4096, 4096, 100, false, false, true, DType::bf16},
      {"bf16_b4h16_4096_d64", 4, 16, 4096, 4096, 64, false, false, false, DType::bf16},
      {"bf16_b4h16_4096_d64_causal", 4, 16, 4096, 4096, 64, true, false, false, DType::bf16},
      {"bf16_b4h16_4096_d64_fused", 4, 16, 4096, 4096, 64, false, true, false, DType::bf16},
      {"bf16_b1h32_8192_d128", 1, 32, 8192, 8192, 128, false, false, false, DType::bf16},
      {"bf16_b1h32_8192_d128_causal", 1, 32, 8192, 8192, 128, true, false, false, DType::bf16},
      {"bf16_b1h32_8192_d128_fused", 1, 32, 8192, 8192, 128, false, true, false, DType::bf16},
      {"bf16_b1h32_8192_d100", 1, 32, 8192, 8192, 100, false, false, false, DType::bf16},
      // Head dims issue 15 lists beside 64 and 128 (d 192 / 256 run the f32
      // detour unless STRATA_FLASH_VARIANT names a wgmma candidate).
      {"bf16_b1h32_8192_d80", 1, 32, 8192, 8192, 80, false, false, false, DType::bf16},
      {"bf16_b1h32_8192_d96", 1, 32, 8192, 8192, 96, false, false, false, DType::bf16},
      {"bf16_b1h32_4096_d192", 1, 32, 4096, 4096, 192, false, false, false, DType::bf16},
      {"bf16_b1h32_4096_d256", 1, 32, 4096, 4096, 256, false, false, false, DType::bf16},
      {"f16_b4h16_4096_d64", 4, 16, 4096, 4096, 64, false, false, false, DType::f16},
      // Forward plus backward under a tape.
      {"bf16_b4h16_4096_d64_fwd_bwd", 4, 16, 4096, 4096, 64, false, false, false, DType::bf16,
       false, strata::Precision::highest, true},
      {"bf16_b4h16_4096_d64_causal_fwd_bwd", 4, 16, 4096, 4096, 64, true, false, false, DType::bf16,
       false, strata::Precision::highest, true},
      {"f32_b4h16_4096_d64_fwd_bwd", 4, 16, 4096, 4096, 64, false, false, false, DType::f32, false,
       strata::Precision::highest, true},
      {"bf16_b1h32_8192_d128_fwd_bwd", 1, 32, 8192, 8192, 128, false, false, false, DType::bf16,
       false, strata::Precision::highest, true},
      {"bf16_b1h32_8192_d128_causal_fwd_bwd", 1, 32, 8192, 8192, 128, true, false, false,
       DType::bf16, false, strata::Precision::highest, true},
      {"f16_b1h32_8192_d128", 1, 32, 8192, 8192, 128, false, false, false, DType::f16},
      // f32 precision high (3xTF32) and medium (TF32): the TF32 tensor-core
      // kernel (backends/cuda/attention/sm80, sm90).
      {"f32high_b4h16_4096_d64", 4, 16, 4096, 4096, 64, false, false, false, DType::f32, false,
       kHigh},
      {"f32high_b4h16_4096_d64_causal", 4, 16, 4096, 4096, 64, true, false, false, DType::f32,
       false, kHigh},
      {"f32high_b1h32_8192_d128", 1, 32, 8192, 8192, 128, false, false, false, DType::f32, false,
       kHigh},
      {"f32high_b1h32_8192_d128_causal", 1, 32, 8192, 8192, 128, true, false, false, DType::f32,
       false, kHigh},
      {"f32medium_b4h16_4096_d64", 4, 16, 4096, 4096, 64, false, false, false, DType::f32, false,
       kMedium},
      {"f32medium_b4h16_4096_d64_causal", 4, 16, 4096, 4096, 64, true, false, false, DType::f32,
       false, kMedium},
      {"f32medium_b1h32_8192_d128", 1, 32, 8192, 8192, 128, false, false, false, DType::f32, false,
       kMedium},
      {"f32medium_b1h32_8192_d128_causal", 1, 32, 8192, 8192, 128, true, false, false, DType::f32,
       false, kMedium},
      // bf16 decode: the split-KV decode kernel (decode/kernel.cuh).
      {"bf16_decode_262144_d128", 1, 1, 1, 262144, 128, false, false, true, DType::bf16},
      {"bf16_decode_b8h32_32768_d128", 8, 32, 1, 32768, 128, false, false, false, DType::bf16},
      // One head at a quarter and four times the keys: t(N) = fixed + N * bytes
      // / bandwidth, so the three sizes separate the launch, ramp and merge
      // cost from the streaming rate (docs/log/cuda-tuning.md, "Decode with bulk
      // copies: measured and promoted").
      {"bf16_decode_65536_d128", 1, 1, 1, 65536, 128, false, false, true, DType::bf16},
      {"bf16_decode_1048576_d128", 1, 1, 1, 1048576, 128, false, false, true, DType::bf16},
  };
  return s;
}

double flops(const Shape& s) {
  const double f =
      4.0 * double(s.B * s.H) * double(s.M) * double(s.N) * double(s.d) * (s.fwd_bwd ? 3.5 : 1.0);
  return s.causal ? f / 2 : f;
}

double bytes(const Shape& s) {
  const double isz = double(strata::itemsize(s.dt));
  return isz * double(s.B * s.H) * double(2 * s.M * s.d + 2 * s.N * s.d);
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Random values without generating gigabytes on the host: a block of
// 2^20 normal values repeated over the tensor (timing does not depend on the
// values, only on them not being zeros).
Tensor random_on_gpu(const strata::Shape& shape, std::uint64_t seed, DType dt) {
  const Tensor t = Tensor::empty(shape, dt, Device::cuda(0));
  const std::int64_t n = t.numel();
  const std::int64_t block = n % (1 << 20) == 0 ? (1 << 20) : n;
  const Tensor src = Tensor::randn({block}, seed, dt).to(Device::cuda(0));
  t.reshape({n / block, block}).copy_from(src);
  return t;
}

void run_shape(benchmark::State& state, const Shape& s) {
  const Device gpu = Device::cuda(0);
  const std::uint64_t seed = 42;
  Tensor q, k, v;
  if (s.fused) {
    const Tensor qkv = random_on_gpu({s.B, s.M, 3, s.H, s.d}, seed, s.dt);
    q = qkv.select(2, 0).transpose(1, 2);  // [B, H, L, d], row stride 3*H*d
    k = qkv.select(2, 1).transpose(1, 2);
    v = qkv.select(2, 2).transpose(1, 2);
  } else if (s.two_d) {
    q = random_on_gpu({s.M, s.d}, seed, s.dt);
    k = s.kt ? random_on_gpu({s.d, s.N}, seed + 1, s.dt).transpose(0, 1)
             : random_on_gpu({s.N, s.d}, seed + 1, s.dt);
    v = random_on_gpu({s.N, s.d}, seed + 2, s.dt);
  } else {
    q = random_on_gpu({s.B, s.H, s.M, s.d}, seed, s.dt);
    k = random_on_gpu({s.B, s.H, s.N, s.d}, seed + 1, s.dt);
    v = random_on_gpu({s.B, s.H, s.N, s.d}, seed + 2, s.dt);
  }
  strata::AttentionOptions opt;
  opt.backend = "cuda";
  opt.precision = s.precision;
  if (s.causal) opt.causal = strata::Causal::bottom_right;
  strata::Shape oshape = q.shape();
  oshape.back() = s.d;
  const Tensor out = Tensor::empty(oshape, s.dt, gpu);
  const std::string kernel = strata::softmax_attention_kernel(q, k, v, opt);
  state.SetLabel(s.fwd_bwd ? kernel + " + backward" : kernel);
  const Tensor grad = s.fwd_bwd ? random_on_gpu(oshape, seed + 3, s.dt) : Tensor();
  // fwd_bwd: events around Tape::backward give the backward's own time.
  cudaEvent_t bwd0 = nullptr, bwd1 = nullptr;
  if (s.fwd_bwd) {
    check_cuda(cudaEventCreate(&bwd0), "cudaEventCreate");
    check_cuda(cudaEventCreate(&bwd1), "cudaEventCreate");
  }
  auto call = [&] {
    if (!s.fwd_bwd) {
      strata::softmax_attention_out(out, q, k, v, opt);
      return;
    }
    strata::autograd::Tape tape;
    for (const Tensor* t : {&q, &k, &v}) tape.watch(*t);
    const Tensor o = strata::softmax_attention(q, k, v, opt);
    check_cuda(cudaEventRecord(bwd0, nullptr), "cudaEventRecord");
    tape.backward(o, grad);
    check_cuda(cudaEventRecord(bwd1, nullptr), "cudaEventRecord");
  };
  // Several calls per timed iteration for short problems so that host-side
  // dispatch stays hidden behind queued GPU work.
  const double est_s = flops(s) / 15e12 + bytes(s) / 3e12;
  const int reps = s.fwd_bwd ? 1 : est_s < 2e-4 ? 20 : est_s < 2e-3 ? 5 : 1;
  double bwd_s = 0;
  for (int i = 0; i < 3; ++i) call();
  check_cuda(cudaDeviceSynchronize(), "warm-up");

  double host_s = 0;  // enqueue time of the calls (front end + launcher), no waiting
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "cudaEventCreate");
  check_cuda(cudaEventCreate(&stop), "cudaEventCreate");
  for (auto _ : state) {
    check_cuda(cudaEventRecord(start, nullptr), "cudaEventRecord");
    const auto h0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) call();
    host_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count() / reps;
    check_cuda(cudaEventRecord(stop, nullptr), "cudaEventRecord");
    check_cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    state.SetIterationTime(double(ms) / 1e3 / reps);
    if (s.fwd_bwd) {
      check_cuda(cudaEventElapsedTime(&ms, bwd0, bwd1), "cudaEventElapsedTime");
      bwd_s += double(ms) / 1e3;
    }
  }
  check_cuda(cudaEventDestroy(start), "cudaEventDestroy");
  check_cuda(cudaEventDestroy(stop), "cudaEventDestroy");
  if (s.fwd_bwd) {
    check_cuda(cudaEventDestroy(bwd0), "cudaEventDestroy");
    check_cuda(cudaEventDestroy(bwd1), "cudaEventDestroy");
    // The backward alone: Tape::backward's time, at 2.5 forwards' FLOPs.
    const double n = double(std::max<std::int64_t>(1, state.iterations()));
    state.counters["bwd_ms"] = benchmark::Counter(1e3 * bwd_s / n);
    state.counters["bwd_TFLOPs"] = benchmark::Counter(flops(s) / 3.5 * 2.5 / (bwd_s / n) / 1e12);
  }
  state.counters["TFLOPs"] =
      benchmark::Counter(flops(s) / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GBps"] =
      benchmark::Counter(bytes(s) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  // Host time per call: when it nears the GPU time, the figure is host-bound.
  state.counters["host_us"] =
      benchmark::Counter(1e6 * host_s / double(std::max<std::int64_t>(1, state.iterations())));
  state.counters["flop"] = flops(s);
  state.counters["bytes"] = bytes(s);
}

int register_all() {
  for (const Shape& s : shapes()) {
    benchmark::RegisterBenchmark((std::string("attention_cuda/") + s.name).c_str(),
                                 [&s](benchmark::State& st) { run_shape(st, s); })
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("bench_attention_cuda: no CUDA device; nothing to time\n");
    return 0;
  }
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
