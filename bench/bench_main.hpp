#pragma once
// The main of a cpu benchmark whose work runs on OpenMP threads: parse the
// flags (an unknown one is an error), register the benchmarks, run them.
#include <benchmark/benchmark.h>

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

}  // namespace strata_bench
