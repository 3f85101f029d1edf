// cuda elementwise and row ops, timed with CUDA events after warm-up
// (Google Benchmark manual time; each timed region is a batch of calls on
// the default stream, divided by the batch). Counter "bytes_per_second":
// every input read once and the output written once. "copy_d2d" is the
// device-to-device cudaMemcpyAsync ceiling of the same run (read + write
// bytes), "copy_bytes" the same for a given byte count (the row
// backward's ceiling). bench/peer_ops.py runs the same shapes through
// PyTorch and reads this binary's JSON output.
//
//   bench_ops_cuda --benchmark_out=ops.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bench_cuda_timing.hpp"
#include "launch_mode.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/detail/iter.hpp"
#include "strata/elementwise.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/registry.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Device;
using strata::DType;
using strata::Tensor;
using namespace strata::bench;  // kGpu, random_dev, time_gpu, check_cuda (bench_cuda_timing.hpp)

double isz(DType dt) { return static_cast<double>(strata::itemsize(dt)); }

void copy_d2d(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n}, DType::f32, 1), o = Tensor::empty({n}, DType::f32, kGpu);
  const std::size_t nb = std::size_t(n) * 4;
  time_gpu(state, 2.0 * nb, [&] {
    check_cuda(cudaMemcpyAsync(o.data_ptr(), a.data_ptr(), nb, cudaMemcpyDeviceToDevice, 0),
               "copy");
  });
}

void add_contig(benchmark::State& state, DType dt) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n}, dt, 2), b = random_dev({n}, dt, 3);
  const Tensor o = Tensor::empty({n}, dt, kGpu);
  time_gpu(state, 3.0 * isz(dt) * double(n), [&] { strata::add_out(o, a, b); });
}

void gelu_contig(benchmark::State& state, DType dt) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n}, dt, 4), o = Tensor::empty({n}, dt, kGpu);
  time_gpu(state, 2.0 * isz(dt) * double(n), [&] { strata::gelu_out(o, a); });
}

void cast_f32_bf16(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n}, DType::f32, 5), o = Tensor::empty({n}, DType::bf16, kGpu);
  time_gpu(state, 6.0 * double(n), [&] { strata::copy_(o, a); });
}

// [8192, 8192] + [8192] (a row broadcast over rows).
void add_broadcast(benchmark::State& state, DType dt) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n, n}, dt, 6), b = random_dev({n}, dt, 7);
  const Tensor o = Tensor::empty({n, n}, dt, kGpu);
  time_gpu(state, isz(dt) * (2.0 * double(n) * double(n) + double(n)),
           [&] { strata::add_out(o, a, b); });
}

// [8192, 8192] + [8192, 8192]^T.
void add_transposed(benchmark::State& state, DType dt) {
  const std::int64_t n = state.range(0);
  const Tensor a = random_dev({n, n}, dt, 8), b = random_dev({n, n}, dt, 9).transpose(0, 1);
  const Tensor o = Tensor::empty({n, n}, dt, kGpu);
  time_gpu(state, 3.0 * isz(dt) * double(n) * double(n), [&] { strata::add_out(o, a, b); });
}

void row_op(benchmark::State& state, DType dt, int which) {
  const std::int64_t r = state.range(0), n = state.range(1);
  const Tensor x = random_dev({r, n}, dt, 10), o = Tensor::empty({r, n}, dt, kGpu);
  const Tensor w = random_dev({n}, dt, 11), b = random_dev({n}, dt, 12);
  const double bytes = 2.0 * isz(dt) * double(r) * double(n);
  if (which == 0)
    time_gpu(state, bytes, [&] { strata::layer_norm_out(o, x, w, b, 1e-5); });
  else if (which == 1)
    time_gpu(state, bytes, [&] { strata::rms_norm_out(o, x, w, 1e-6); });
  else
    time_gpu(state, bytes, [&] { strata::softmax_out(o, x, 1); });
}

// The row ops' backward kernels on [r, n]: 0 softmax_backward, 1
// log_softmax_backward (grad and y read, dx written), 2
// layer_norm_backward (grad and x read, dx written, dweight and dbias: the
// weight's gradient of a training step), 3 rms_norm_backward (dx and
// dweight). bytes: the three [r, n] tensors once (the [n] rows are
// negligible). Their ceiling is copy_bytes at half those bytes.
void row_backward(benchmark::State& state, DType dt, int which) {
  const std::int64_t r = state.range(0), n = state.range(1);
  const Tensor g = random_dev({r, n}, dt, 20), x = random_dev({r, n}, dt, 21);
  const Tensor w = random_dev({n}, dt, 22), dx = Tensor::empty({r, n}, dt, kGpu);
  const Tensor dw = Tensor::empty({n}, dt, kGpu), db = Tensor::empty({n}, dt, kGpu);
  const Tensor y = which == 0 ? strata::softmax(x, 1) : which == 1 ? strata::log_softmax(x, 1) : x;
  const double bytes = 3.0 * isz(dt) * double(r) * double(n);
  if (which == 0)
    time_gpu(state, bytes, [&] { strata::softmax_backward_out(dx, g, y, 1); });
  else if (which == 1)
    time_gpu(state, bytes, [&] { strata::log_softmax_backward_out(dx, g, y, 1); });
  else if (which == 2)
    time_gpu(state, bytes, [&] { strata::layer_norm_backward_out(dx, dw, db, g, x, w, 1e-5); });
  else
    time_gpu(state, bytes, [&] { strata::rms_norm_backward_out(dx, dw, g, x, w, 1e-6); });
}

// A language model's loss over [r, v] logits (GPT-2: 16 x 1024 rows of a
// 50304 vocabulary) and its backward, what one training step runs:
// cross_entropy_out (mean, the rows' lse kept) then
// cross_entropy_backward_out straight into the logits' gradient. bytes: the
// logits read twice and the gradient written once. Its ceiling is
// copy_bytes at half those bytes.
void cross_entropy_step(benchmark::State& state, DType dt) {
  const std::int64_t r = state.range(0), v = state.range(1);
  const Tensor x = random_dev({r, v}, dt, 24), dx = Tensor::empty({r, v}, dt, kGpu);
  const Tensor t = strata::cast(strata::abs(random_dev({r}, DType::f32, 25)) * 1000.0, DType::i64);
  const Tensor loss = Tensor::empty({}, DType::f32, kGpu),
               lse = Tensor::empty({r}, DType::f32, kGpu);
  const Tensor g = Tensor::full({}, 1.0 / double(r), DType::f32).to(kGpu);
  const double bytes = 3.0 * isz(dt) * double(r) * double(v);
  time_gpu(state, bytes, [&] {
    strata::cross_entropy_out(loss, x, t, {}, {}, lse);
    strata::cross_entropy_backward_out(dx, g, x, t, lse);
  });
}

// A device-to-device copy of state.range(0) bytes (read + write counted):
// the ceiling of a run that moves twice those bytes.
void copy_bytes(benchmark::State& state) {
  const std::int64_t nb = state.range(0);
  const Tensor a = random_dev({nb / 4}, DType::f32, 23),
               o = Tensor::empty({nb / 4}, DType::f32, kGpu);
  time_gpu(state, 2.0 * double(nb), [&] {
    check_cuda(
        cudaMemcpyAsync(o.data_ptr(), a.data_ptr(), std::size_t(nb), cudaMemcpyDeviceToDevice, 0),
        "copy");
  });
}

// Host wall time per call of a 4-element add (front end, allocation of the
// output for the allocating form, registry, launch), the GPU kept busy
// only by these calls; synchronised once per batch of 1000. us_per_call is
// the batch's wall time (the slower of host and GPU), host_us_per_call the
// time until the last call returned (the host's share: below us_per_call,
// the GPU is what limits). `which` splits the call into its parts:
//   0 add_out               1 add (allocating)
//   2 Tensor::empty({4}) on the GPU and its free, nothing else
//   3 the raw launcher: the registry's cuda kernel run on an IterArgs
//     prepared once (the engine's checks, parameters and the launch)
//   4 the host work before the launch of add_out: resolve the backend,
//     build the IterArgs, find the kernel (no validation, no launch)
//   5 add_out's validation alone (every check an _out front end makes)
// `mode` is the launch (launch_mode.cuh): 0 PDL (the default), 1
// cudaLaunchKernelEx without attributes, 2 <<<>>>. So add_out ~ 5 + 4 + 3,
// and 3 at mode 0 against mode 2 is the PDL attribute's host cost.
void tiny_add(benchmark::State& state, int which, int mode) {
  namespace sc = strata::cuda;
  const sc::LaunchMode before = sc::launch_mode();
  sc::set_launch_mode(static_cast<sc::LaunchMode>(mode));
  const Tensor a = random_dev({4}, DType::f32, 13), b = random_dev({4}, DType::f32, 14);
  const Tensor o = Tensor::empty({4}, DType::f32, kGpu);
  const strata::Registry& reg = strata::Registry::get();
  const strata::OpId id = reg.op_id("add");
  const strata::BackendId be = reg.resolve_backend("add", "auto", kGpu);
  const strata::IterArgs it = strata::detail::make_iter(o, {&a, &b});
  const auto kernel = reg.find(id, be, DType::f32, it).run;
  for (int i = 0; i < 100; ++i) (void)strata::add(a, b);
  check_cuda(cudaDeviceSynchronize(), "sync");
  double total = 0, host = 0;
  std::int64_t calls = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
      switch (which) {
        case 1:
          benchmark::DoNotOptimize(strata::add(a, b));
          break;
        case 2:
          benchmark::DoNotOptimize(Tensor::empty({4}, DType::f32, kGpu));
          break;
        case 3:
          kernel(it);
          break;
        case 4: {
          const strata::OpOptions opt;
          const strata::BackendId e = strata::detail::resolve_backend("add", opt.backend, kGpu);
          strata::IterArgs x = strata::detail::make_iter(o, {&a, &b});
          x.stream = opt.stream;
          benchmark::DoNotOptimize(reg.find(id, e, DType::f32, x).run);
          benchmark::DoNotOptimize(x);
          break;
        }
        case 5: {
          using strata::detail::Named;
          const char* op = "add";
          strata::detail::check_defined(op, o, "out");
          strata::detail::check_defined(op, a, "a");
          strata::detail::check_defined(op, b, "b");
          strata::detail::check_floating(op, a, "a");
          strata::detail::check_dtype(op, b, "b", a.dtype(), "a");
          const strata::Shape sh = strata::detail::broadcast_all(op, {{&a, "a"}, {&b, "b"}});
          strata::detail::check_same_device(op, {{&o, "out"}, {&a, "a"}, {&b, "b"}});
          strata::detail::check_output(op, o, "out", sh, a.dtype(), o.device());
          strata::detail::check_no_overlap(op, o, "out", {{&a, "a"}, {&b, "b"}}, true);
          break;
        }
        default:
          strata::add_out(o, a, b);
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    check_cuda(cudaDeviceSynchronize(), "sync");
    const auto t2 = std::chrono::steady_clock::now();
    const double s = std::chrono::duration<double>(t2 - t0).count();
    state.SetIterationTime(s);
    total += s;
    host += std::chrono::duration<double>(t1 - t0).count();
    calls += 1000;
  }
  sc::set_launch_mode(before);
  state.counters["us_per_call"] = calls ? total * 1e6 / double(calls) : 0.0;
  state.counters["host_us_per_call"] = calls ? host * 1e6 / double(calls) : 0.0;
}

}  // namespace

BENCHMARK(copy_d2d)->Arg(64 << 20)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add_contig, f32, DType::f32)
    ->Arg(1 << 12)
    ->Arg(1 << 16)
    ->Arg(1 << 20)
    ->Arg(1 << 24)
    ->Arg(1 << 26)
    ->Arg(1 << 28)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add_contig, bf16, DType::bf16)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(gelu_contig, f32, DType::f32)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(gelu_contig, bf16, DType::bf16)
    ->Arg(64 << 20)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(cast_f32_bf16)->Arg(64 << 20)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add_broadcast, f32, DType::f32)
    ->Arg(8192)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add_transposed, f32, DType::f32)
    ->Arg(8192)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(add_transposed, bf16, DType::bf16)
    ->Arg(8192)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, layer_norm_f32, DType::f32, 0)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, layer_norm_bf16, DType::bf16, 0)
    ->Args({4096, 4096})
    ->Args({8192, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, rms_norm_f32, DType::f32, 1)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, rms_norm_bf16, DType::bf16, 1)
    ->Args({4096, 4096})
    ->Args({8192, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, softmax_f32, DType::f32, 2)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_op, softmax_bf16, DType::bf16, 2)
    ->Args({4096, 4096})
    ->Args({8192, 2048})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
// The backward kernels at 4096 x 4096 beside copies of the same bytes
// (f32: 3 x 64 MiB moved, so 96 MiB copied; bf16: 48 MiB copied).
BENCHMARK(copy_bytes)->Arg(3 << 25)->Arg(3 << 24)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, softmax_f32, DType::f32, 0)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, softmax_bf16, DType::bf16, 0)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, log_softmax_f32, DType::f32, 1)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, log_softmax_bf16, DType::bf16, 1)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, layer_norm_f32, DType::f32, 2)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, layer_norm_bf16, DType::bf16, 2)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, rms_norm_f32, DType::f32, 3)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(row_backward, rms_norm_bf16, DType::bf16, 3)
    ->Args({4096, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
// cross_entropy's step beside a copy of half its bytes (bf16 logits
// 16384 x 50304: 1.5 x 1.65 GB).
BENCHMARK(copy_bytes)->Arg(2472591360)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(cross_entropy_step, bf16, DType::bf16)
    ->Args({16384, 50304})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, alloc, 1, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, out, 0, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, empty_only, 2, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
// The split of add_out's host time (see tiny_add) and the launch A/B.
BENCHMARK_CAPTURE(tiny_add, validate_only, 5, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, prepare_only, 4, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, launch_pdl, 3, 0)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, launch_ex, 3, 1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, launch_plain, 3, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, out_plain, 0, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(tiny_add, alloc_plain, 1, 2)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
