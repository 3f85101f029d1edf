#pragma once
// The main of a cpu benchmark whose work runs on OpenMP threads: parse the
// flags (an unknown one is an error), register the benchmarks, run them.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>

namespace strata_bench {

template <class Register>
int run_benchmarks(int argc, char** argv, Register register_all) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  // Wall time: the work runs on OpenMP threads, not the benchmark's thread.
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The "GFLOP/s" counter of `gemms` GEMMs of 2 M N K flops each per iteration.
inline void report_gemm_rate(benchmark::State& st, int gemms, std::int64_t M, std::int64_t K,
                             std::int64_t N) {
  st.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * gemms * double(M) * double(N) * double(K) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
}

// RegisterBenchmark(name, args...) timed by the wall clock (the work runs on
// OpenMP threads) and reported in milliseconds.
template <class... A>
benchmark::internal::Benchmark* register_wall_ms(const char* name, A&&... a) {
  return benchmark::RegisterBenchmark(name, std::forward<A>(a)...)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace strata_bench
