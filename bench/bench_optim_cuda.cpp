// The fused optimizer update on cuda (adamw_step_, one call over a model's
// parameters as nn::AdamW makes it) beside a device-to-device copy of the
// same bytes in the same run: the update streams every array once, so the
// copy is its ceiling. Parameters shaped as GPT-2 124M's (vocabulary
// 50304, 12 layers of d 768) or the 17M Llama of bench_train_cuda.
//   adamw/<model>_f32    f32 params, grads and state (28 bytes a parameter)
//   adamw/<model>_bf16   bf16 params and grads, f32 masters and state
//                        (28 bytes a parameter)
//   copy/<model>         cudaMemcpyAsync of those bytes, half read, half written
//
//   bench_optim_cuda --benchmark_out=optim.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_cuda_timing.hpp"
#include "strata/optim_ops.hpp"
#include "strata/tensor.hpp"

namespace {

using strata::DType;
using strata::Shape;
using strata::Tensor;
namespace sb = strata::bench;

std::vector<Shape> gpt2_shapes() {
  std::vector<Shape> s{{50304, 768}, {1024, 768}};
  for (int l = 0; l < 12; ++l) {
    for (const Shape& x : std::vector<Shape>{{768},
                                             {768},
                                             {2304, 768},
                                             {2304},
                                             {768, 768},
                                             {768},
                                             {768},
                                             {768},
                                             {3072, 768},
                                             {3072},
                                             {768, 3072},
                                             {768}})
      s.push_back(x);
  }
  s.push_back({768});
  s.push_back({768});
  return s;
}

std::vector<Shape> llama17m_shapes() {
  std::vector<Shape> s{{256, 512}};
  for (int l = 0; l < 6; ++l) {
    for (const Shape& x : std::vector<Shape>{{512},
                                             {512, 512},
                                             {128, 512},
                                             {128, 512},
                                             {512, 512},
                                             {512},
                                             {1408, 512},
                                             {1408, 512},
                                             {512, 1408}})
      s.push_back(x);
  }
  s.push_back({512});
  s.push_back({256, 512});
  return s;
}

std::vector<Shape> shapes_of(int model) { return model == 0 ? gpt2_shapes() : llama17m_shapes(); }

std::int64_t numel_of(const std::vector<Shape>& shapes) {
  std::int64_t n = 0;
  for (const Shape& s : shapes) n += strata::shape_numel(s);
  return n;
}

constexpr double kBytesPerParam = 28;  // read and written: see the header comment

void adamw(benchmark::State& state, int model, DType dt) {
  const std::vector<Shape> shapes = shapes_of(model);
  std::vector<Tensor> params, grads, m, v, masters;
  std::uint64_t seed = 1;
  for (const Shape& s : shapes) {
    params.push_back(sb::random_dev(s, dt, seed++));
    grads.push_back(sb::random_dev(s, dt, seed++));
    m.push_back(Tensor::zeros(s, DType::f32, sb::kGpu));
    v.push_back(Tensor::zeros(s, DType::f32, sb::kGpu));
    if (dt != DType::f32) masters.push_back(params.back().to(DType::f32));
  }
  strata::AdamWStep st;
  st.lr = 6e-4;
  st.beta1 = 0.9;
  st.beta2 = 0.95;
  st.eps = 1e-8;
  st.weight_decay = 0.1;
  st.grad_scale = 0.5;  // as a clipped step passes it
  const double n = static_cast<double>(numel_of(shapes));
  state.counters["params_M"] = n * 1e-6;
  sb::time_gpu(state, kBytesPerParam * n, [&] {
    strata::adamw_step_(params, grads, m, v, masters, st);
    ++st.step;
  });
}

void copy(benchmark::State& state, int model) {
  const std::int64_t half =
      static_cast<std::int64_t>(kBytesPerParam / 2) * numel_of(shapes_of(model));
  const Tensor a = Tensor::zeros({half / 4}, DType::f32, sb::kGpu);
  const Tensor o = Tensor::empty({half / 4}, DType::f32, sb::kGpu);
  sb::time_gpu(state, 2.0 * static_cast<double>(half), [&] {
    sb::check_cuda(
        cudaMemcpyAsync(o.data_ptr(), a.data_ptr(), static_cast<std::size_t>(half / 4 * 4),
                        cudaMemcpyDeviceToDevice, nullptr),
        "copy");
  });
}

// Per model: the copy (the ceiling), then the update in f32 and bf16.
const int kRegistered = [] {
  for (const int model : {0, 1}) {
    const std::string name = model == 0 ? "gpt2_124m" : "llama17m";
    benchmark::RegisterBenchmark(("copy/" + name).c_str(), copy, model)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
    for (const DType dt : {DType::f32, DType::bf16})
      benchmark::RegisterBenchmark(
          ("adamw/" + name + "_" + std::string(strata::dtype_name(dt))).c_str(), adamw, model, dt)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
