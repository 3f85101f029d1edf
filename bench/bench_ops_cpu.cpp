// cpu elementwise ops: bytes/s on contiguous, broadcast and transposed
// inputs beside a plain memcpy-style copy of the same bytes in the same run
// (the ceiling), and the host cost of one tiny op call (the overhead a
// model running hundreds of ops per token pays). Run:
//   build/bench/bench_ops_cpu --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>

#include "strata/elementwise.hpp"

namespace {

using strata::DType;
using strata::Tensor;
using i64 = std::int64_t;

void set_bytes(benchmark::State& st, double bytes) {
  st.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// op(out, a) on a contiguous f32 a [n] into out [n] of dtype out_dt, which
// moves bytes_per_element bytes an element.
template <class Op>
void bm_one_input(benchmark::State& st, DType out_dt, double bytes_per_element, const Op& op) {
  const i64 n = st.range(0);
  const Tensor a = Tensor::randn({n}, 1), out = Tensor::empty({n}, out_dt);
  for (auto _ : st) op(out, a);
  set_bytes(st, bytes_per_element * double(n));
}

// Ceiling: read n floats and write n floats with the cpu backend's own
// threads (a contiguous copy_ is exactly that).
void bm_copy(benchmark::State& st) {
  bm_one_input(st, DType::f32, 8.0,
               [](const Tensor& out, const Tensor& a) { strata::copy_(out, a); });
}

void bm_add(benchmark::State& st) {
  const i64 n = st.range(0);
  const Tensor a = Tensor::randn({n}, 1), b = Tensor::randn({n}, 2), out = Tensor::empty({n});
  for (auto _ : st) strata::add_out(out, a, b);
  set_bytes(st, 12.0 * double(n));
}

void bm_gelu(benchmark::State& st) {
  bm_one_input(st, DType::f32, 8.0,
               [](const Tensor& out, const Tensor& a) { strata::gelu_out(out, a); });
}

void bm_cast_bf16(benchmark::State& st) {
  bm_one_input(st, DType::bf16, 6.0,
               [](const Tensor& out, const Tensor& a) { strata::copy_(out, a); });
}

// [rows, 4096] + [4096]: the bias add of a linear layer.
void bm_add_broadcast(benchmark::State& st) {
  const i64 rows = st.range(0) / 4096;
  const Tensor a = Tensor::randn({rows, 4096}, 1), b = Tensor::randn({4096}, 2);
  const Tensor out = Tensor::empty({rows, 4096});
  for (auto _ : st) strata::add_out(out, a, b);
  set_bytes(st, 8.0 * double(rows * 4096));
}

// a + b^T with both [4096, n/4096]: one input walks columns.
void bm_add_transposed(benchmark::State& st) {
  const i64 cols = st.range(0) / 4096;
  const Tensor a = Tensor::randn({4096, cols}, 1), b = Tensor::randn({cols, 4096}, 2);
  const Tensor out = Tensor::empty({4096, cols});
  for (auto _ : st) strata::add_out(out, a, b.transpose(0, 1));
  set_bytes(st, 12.0 * double(4096 * cols));
}

// Host cost of one call on 4 elements: validation, iteration setup,
// registry lookup and the kernel (the result is written in place).
void bm_tiny_add_out(benchmark::State& st) {
  const Tensor a = Tensor::randn({4}, 1), out = Tensor::empty({4});
  for (auto _ : st) strata::add_out(out, a, a);
}
// The same with the output allocated by the op, as `a + b` does.
void bm_tiny_add(benchmark::State& st) {
  const Tensor a = Tensor::randn({4}, 1);
  for (auto _ : st) benchmark::DoNotOptimize(strata::add(a, a));
}

constexpr i64 kBig = i64(1) << 24;  // 16M f32: 64 MiB per operand, past every cache

BENCHMARK(bm_copy)->Arg(kBig)->UseRealTime();
BENCHMARK(bm_add)->Arg(kBig)->Arg(i64(1) << 16)->UseRealTime();
BENCHMARK(bm_gelu)->Arg(kBig)->UseRealTime();
BENCHMARK(bm_cast_bf16)->Arg(kBig)->UseRealTime();
BENCHMARK(bm_add_broadcast)->Arg(kBig)->UseRealTime();
BENCHMARK(bm_add_transposed)->Arg(kBig)->UseRealTime();
BENCHMARK(bm_tiny_add_out);
BENCHMARK(bm_tiny_add);

}  // namespace

BENCHMARK_MAIN();
