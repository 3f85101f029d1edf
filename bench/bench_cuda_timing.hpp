#pragma once
// What the cuda benchmarks of single ops share: random device tensors made
// without gigabytes on the host, and timing with CUDA events (Google
// Benchmark manual time; each timed region is a batch of calls on the
// default stream, divided by the batch). Counter "bytes_per_second": the
// bytes the caller says one call moves.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "strata/elementwise.hpp"
#include "strata/tensor.hpp"

namespace strata::bench {

inline const Device kGpu = Device::cuda(0);

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Random values on the device without generating gigabytes on the host: a
// 2^20-element random block repeated over the tensor.
inline Tensor random_dev(const strata::Shape& shape, DType dt, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape, dt, kGpu);
  const std::int64_t n = t.numel(), blk = std::min<std::int64_t>(n, 1 << 20);
  const Tensor src = Tensor::randn({blk}, seed, dt).to(kGpu);
  const Tensor flat = t.reshape({n});
  for (std::int64_t o = 0; o < n; o += blk) {
    const std::int64_t len = std::min(blk, n - o);
    strata::copy_(flat.narrow(0, o, len), src.narrow(0, 0, len));
  }
  return t;
}

// Times f with events: warm-up, then batches until Google Benchmark is done.
inline void time_gpu(benchmark::State& state, double bytes, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  check_cuda(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t start, stop;
  check_cuda(cudaEventCreate(&start), "event");
  check_cuda(cudaEventCreate(&stop), "event");
  // Batch so that one timed region lasts >= ~1 ms.
  check_cuda(cudaEventRecord(start), "record");
  f();
  check_cuda(cudaEventRecord(stop), "record");
  check_cuda(cudaEventSynchronize(stop), "sync");
  float one = 0;
  check_cuda(cudaEventElapsedTime(&one, start, stop), "elapsed");
  const int batch = one > 1.0f ? 1 : static_cast<int>(std::min(1000.0f, 1.0f / (one + 1e-4f)));
  // One iteration is one batch (so small ops do not multiply the run time);
  // bytes_per_second counts the batch's bytes, us_per_op the mean per call.
  double total_ms = 0;
  std::int64_t calls = 0;
  for (auto _ : state) {
    check_cuda(cudaEventRecord(start), "record");
    for (int i = 0; i < batch; ++i) f();
    check_cuda(cudaEventRecord(stop), "record");
    check_cuda(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    state.SetIterationTime(ms * 1e-3);
    total_ms += ms;
    calls += batch;
  }
  state.counters["bytes_per_second"] =
      benchmark::Counter(bytes * batch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["bytes"] = bytes;
  state.counters["us_per_op"] = calls ? total_ms * 1e3 / double(calls) : 0.0;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

}  // namespace strata::bench
