// matmul on the cuda backend against cuBLAS called directly on the same
// device buffers (cublasGemmEx, row-major via C^T = B^T A^T, the library's
// default workspace), timed with CUDA events (Google Benchmark manual time,
// each iteration a batch of calls after warm-up). Reports TFLOP/s (2 M N K).
// bench/peer_matmul.py times torch.matmul on the same shapes and reads this
// binary's JSON output. Every case also reports host_us_per_call: the host
// time until the batch's last call returned (when it is close to the event
// time per call, the host is what limits). The matmul_cuda_host/ cases
// split the skinny calls' host cost: linear (x W^T, the shape the gemv
// kernel serves; the matmul_cuda/ skinny cases have b row-major, which the
// gemv refuses: gemv_multirow takes them, up to 16 rows by default, fewer
// with STRATA_GEMV_ROWS_MAX_M, else cuBLAS) launched with or without PDL, and
// cuBLAS directly on a handle set up as Strata's (math mode, 32 MiB
// workspace).
//
//   bench_matmul_cuda --benchmark_out=matmul_cuda.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "launch_mode.hpp"
#include "strata/matmul.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::Device;
using strata::DType;
using strata::Precision;
using strata::Tensor;

struct Shape {
  const char* name;
  std::int64_t M, K, N;
};
struct Mode {
  const char* name;
  DType dt;
  Precision p;
};

// Kept in step with SHAPES and MODES in bench/peer_matmul.py.
const Shape kShapes[] = {{"sq512", 512, 512, 512},
                         {"sq1024", 1024, 1024, 1024},
                         {"sq2048", 2048, 2048, 2048},
                         {"sq4096", 4096, 4096, 4096},
                         {"sq8192", 8192, 8192, 8192},
                         {"skinny_1x512x1536", 1, 512, 1536},
                         {"skinny_16x512x1408", 16, 512, 1408},
                         // 4 and 8 rows: gemv_multirow (docs/guide/matmul.md).
                         {"skinny_4x512x1536", 4, 512, 1536},
                         {"skinny_8x512x1536", 8, 512, 1536}};
const Mode kModes[] = {{"f32_highest", DType::f32, Precision::highest},
                       {"f32_medium", DType::f32, Precision::medium},
                       {"bf16", DType::bf16, Precision::highest}};

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}
void blas_ok(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, cublasGetStatusName(s));
    std::exit(1);
  }
}

struct Buffers {
  Tensor a, b, out;
};
Buffers make(const Shape& s, DType dt) {
  const Device g = Device::cuda(0);
  return {Tensor::randn({s.M, s.K}, 1, dt, g), Tensor::randn({s.K, s.N}, 2, dt, g),
          Tensor::empty({s.M, s.N}, dt, g)};
}

// Calls per timed iteration: enough that one iteration is >= ~1 ms.
int reps_for(const Shape& s) {
  const double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
  const double r = 2e10 / flop;  // ~1 ms at 20 TFLOP/s
  return r < 1 ? 1 : (r > 200 ? 200 : int(r));
}

template <class F>
void time_loop(benchmark::State& st, const Shape& s, F call) {
  const int reps = reps_for(s);
  for (int i = 0; i < 3; ++i) call();  // warm-up: handles, heuristics, pool
  cuda_ok(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t e0, e1;
  cuda_ok(cudaEventCreate(&e0), "event");
  cuda_ok(cudaEventCreate(&e1), "event");
  double total_s = 0, host_s = 0;
  for (auto _ : st) {
    cuda_ok(cudaEventRecord(e0), "record");
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) call();
    host_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
    cuda_ok(cudaEventRecord(e1), "record");
    cuda_ok(cudaEventSynchronize(e1), "sync");
    float ms = 0;
    cuda_ok(cudaEventElapsedTime(&ms, e0, e1), "elapsed");
    st.SetIterationTime(double(ms) * 1e-3 / reps);
    total_s += double(ms) * 1e-3 / reps;
  }
  cuda_ok(cudaEventDestroy(e0), "event");
  cuda_ok(cudaEventDestroy(e1), "event");
  // A plain value (not a rate counter): flop per second of the event time.
  const double flop = 2.0 * double(s.M) * double(s.N) * double(s.K);
  st.counters["TFLOP/s"] = total_s > 0 ? flop * double(st.iterations()) / total_s * 1e-12 : 0;
  st.counters["host_us_per_call"] = host_s * 1e6 / double(st.iterations());
}

void bm_strata(benchmark::State& st, Shape s, Mode m) {
  Buffers b = make(s, m.dt);
  strata::MatmulOptions o;
  o.backend = "cuda";
  o.precision = m.p;
  time_loop(st, s, [&] { strata::matmul_out(b.out, b.a, b.b, o); });
}

// cublasGemmEx's arguments for shape s in mode m: the data type, the compute
// type (TF32 for Precision::medium), the sizes.
struct GemmArgs {
  cudaDataType_t t;
  cublasComputeType_t ct;
  int M, N, K;
  float alpha = 1, beta = 0;
};
GemmArgs gemm_args(const Shape& s, const Mode& m) {
  return {m.dt == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F,
          m.p == Precision::medium ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, int(s.M),
          int(s.N), int(s.K)};
}

// b.out = b.a b.b (row-major: cuBLAS's column-major b^T a^T) on h.
void gemm_ab(cublasHandle_t h, const GemmArgs& g, const Buffers& b) {
  blas_ok(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, b.b.data_ptr(), g.t,
                       g.N, b.a.data_ptr(), g.t, g.K, &g.beta, b.out.data_ptr(), g.t, g.N, g.ct,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
}

void bm_cublas(benchmark::State& st, Shape s, Mode m) {
  Buffers b = make(s, m.dt);
  cublasHandle_t h;
  blas_ok(cublasCreate(&h), "cublasCreate");
  const GemmArgs g = gemm_args(s, m);
  time_loop(st, s, [&] { gemm_ab(h, g, b); });
  blas_ok(cublasDestroy(h), "cublasDestroy");
}

// linear_out(out, x, W) with W [N, K] (x W^T: the gemv's layout for M <= 8),
// launched in launch mode `mode` (0 PDL, 2 plain).
void bm_strata_linear(benchmark::State& st, Shape s, Mode m, int mode) {
  namespace sc = strata::cuda;
  const Device g = Device::cuda(0);
  const Tensor x = Tensor::randn({s.M, s.K}, 1, m.dt, g), w = Tensor::randn({s.N, s.K}, 2, m.dt, g);
  const Tensor out = Tensor::empty({s.M, s.N}, m.dt, g);
  strata::MatmulOptions o;
  o.precision = m.p;
  const sc::LaunchMode before = sc::launch_mode();
  sc::set_launch_mode(static_cast<sc::LaunchMode>(mode));
  time_loop(st, s, [&] { strata::linear_out(out, x, w, Tensor(), o); });
  sc::set_launch_mode(before);
}

// cuBLAS directly for x W^T, or for a b (weight == false), on a handle set
// up as matmul_cublas.cu's: reduced-precision reductions disallowed, a
// 32 MiB workspace of our own.
void bm_cublas_like_strata(benchmark::State& st, Shape s, Mode m, bool weight) {
  Buffers b = make(s, m.dt);
  const Tensor w = Tensor::randn({s.N, s.K}, 2, m.dt, Device::cuda(0));
  cublasHandle_t h;
  blas_ok(cublasCreate(&h), "cublasCreate");
  blas_ok(cublasSetMathMode(h, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION), "math mode");
  void* ws = nullptr;
  cuda_ok(cudaMalloc(&ws, std::size_t(32) << 20), "workspace");
  blas_ok(cublasSetStream(h, nullptr), "stream");
  blas_ok(cublasSetWorkspace(h, ws, std::size_t(32) << 20), "workspace");
  const GemmArgs g = gemm_args(s, m);
  time_loop(st, s, [&] {
    if (weight)
      blas_ok(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha, w.data_ptr(), g.t,
                           g.K, b.a.data_ptr(), g.t, g.K, &g.beta, b.out.data_ptr(), g.t, g.N, g.ct,
                           CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
    else
      gemm_ab(h, g, b);
  });
  blas_ok(cublasDestroy(h), "cublasDestroy");
  cuda_ok(cudaFree(ws), "free");
}

}  // namespace

// Strata and cuBLAS in turn per shape and mode.
int main(int argc, char** argv) {
  constexpr int kIters = 25;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("bench_matmul_cuda: no CUDA device\n");
    return 0;
  }
  for (const Mode& m : kModes) {
    for (const Shape& s : kShapes) {
      const std::string base = std::string("matmul_cuda/") + s.name + "/" + m.name;
      // A fixed count of timed batches (each ~1 ms or one call): manual
      // time is per call, so Google Benchmark's own stopping rule would run
      // reps times longer than it believes.
      benchmark::RegisterBenchmark((base + "/strata").c_str(), bm_strata, s, m)
          ->Iterations(kIters)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark((base + "/cublas").c_str(), bm_cublas, s, m)
          ->Iterations(kIters)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  // The host-cost split of the skinny shapes (not read by peer_matmul.py).
  for (const Mode& m : {kModes[0], kModes[2]}) {
    for (const Shape& s : {kShapes[5], kShapes[6]}) {
      const std::string base = std::string("matmul_cuda_host/") + s.name + "/" + m.name;
      const auto reg = [&](const std::string& who, auto fn, auto... extra) {
        benchmark::RegisterBenchmark((base + "/" + who).c_str(), fn, s, m, extra...)
            ->Iterations(kIters)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      };
      reg("linear_strata", bm_strata_linear, 0);
      reg("linear_strata_plain", bm_strata_linear, 2);
      reg("linear_cublas_strata_handle", bm_cublas_like_strata, true);
      reg("matmul_cublas_strata_handle", bm_cublas_like_strata, false);
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
