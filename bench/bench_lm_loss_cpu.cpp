// The language-model loss at a GPT-2 head on the cpu backend, f32: the
// final LayerNorm, the head (V x D) and the mean cross entropy, forward and
// backward under a tape, gradients added into caller-owned buffers.
//
//   fused:   nn::lm_loss over chunks of rows (the chunk's logits only; each
//            chunk's logits recomputed in backward: one more GEMM)
//   unfused: layer_norm -> linear -> cross_entropy, holding the [rows, V]
//            logits and their gradient
//
// Each benchmark reports its time per step and peak_MiB, the bytes a step
// adds to the process at its peak: measured in a child process (this binary
// run again with --peak) with STRATA_HOST_CACHE=0 and a fixed glibc mmap
// threshold, so that freed blocks go back to the system and the resident
// high-water mark (VmHWM, reset through /proc/self/clear_refs after a first
// step) follows what is alive.
//
//   bench_lm_loss_cpu [--benchmark_filter=...]
//   bench_lm_loss_cpu --peak=CHUNK   (CHUNK -1: unfused; prints the bytes)
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "bench_main.hpp"
#include "strata/autograd.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "strata/nn/decoder.hpp"

namespace {

using strata::Tensor;
namespace nn = strata::nn;

constexpr std::int64_t kRows = 1024, kDim = 768, kVocab = 50304;  // GPT-2 124M, B T = 1024

struct Head {
  Tensor x = Tensor::randn({kRows, kDim}, 1);
  nn::Norm norm = nn::LayerNorm(kDim, 1e-5, true);
  Tensor w = strata::mul(Tensor::randn({kVocab, kDim}, 2), 0.02);
  Tensor targets;
  Tensor gx = Tensor::zeros({kRows, kDim}), gw = Tensor::zeros({kVocab, kDim});
  Tensor gnw = Tensor::zeros({kDim}), gnb = Tensor::zeros({kDim});
  Head() {
    std::vector<std::int64_t> t(static_cast<std::size_t>(kRows));
    for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<std::int64_t>(i * 7919) % kVocab;
    targets = Tensor::from_vector(t, {kRows});
  }

  // One training step of the head; chunk < 0: the unfused ops.
  void step(std::int64_t chunk) {
    strata::MatmulOptions o;
    o.backend = "cpu";
    const auto& ln = std::get<nn::LayerNorm>(norm);
    strata::autograd::Tape tape;
    tape.watch(x, gx);
    tape.watch(w, gw);
    tape.watch(ln.weight, gnw);
    tape.watch(ln.bias, gnb);
    Tensor loss;
    if (chunk >= 0) {
      nn::LossOptions lo;
      lo.chunk_rows = chunk;
      loss = nn::lm_loss(x, norm, w, targets, lo, o);
    } else {
      loss =
          strata::cross_entropy(strata::linear(ln.forward(x, o), w, Tensor(), o), targets, {}, o);
    }
    tape.backward(loss, {}, o);
  }
};

long status_kib(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(key);
  while (std::getline(f, line))
    if (line.compare(0, n, key) == 0) return std::atol(line.c_str() + n);
  return -1;
}

// The child's side: one step to set up what a first call does once, then the
// high-water mark of the next step above the resident bytes before it.
int peak_main(std::int64_t chunk) {
  Head h;
  h.step(chunk);
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";  // resets VmHWM to VmRSS
  }
  const long before = status_kib("VmRSS:");
  h.step(chunk);
  const long peak = status_kib("VmHWM:");
  std::printf("%ld\n", (peak - before) * 1024);
  return before < 0 || peak < 0 ? 1 : 0;
}

// The parent's side: the child's answer in MiB (-1 when it gave none).
double peak_mib(std::int64_t chunk) {
  // This binary's own path: /proc/self/exe inside the command would be the shell's.
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof(self) - 1) <= 0) return -1;
  const std::string cmd = std::string("MALLOC_MMAP_THRESHOLD_=65536 STRATA_HOST_CACHE=0 '") + self +
                          "' --peak=" + std::to_string(chunk);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  long bytes = -1;
  if (std::fscanf(p, "%ld", &bytes) != 1) bytes = -1;
  const int rc = pclose(p);
  return rc == 0 && bytes >= 0 ? double(bytes) / double(1 << 20) : -1;
}

void BM_lm_loss(benchmark::State& st) {
  const std::int64_t chunk = st.range(0);
  Head h;
  h.step(chunk);  // first-call set-up outside the timing
  for (auto _ : st) {
    h.step(chunk);
    benchmark::DoNotOptimize(h.gw.data_ptr());
    benchmark::ClobberMemory();
  }
  st.counters["peak_MiB"] = peak_mib(chunk);
  st.counters["logits_MiB"] = double(kRows * kVocab * 4) / double(1 << 20);
  st.SetLabel(chunk < 0 ? "unfused" : chunk == 0 ? "fused, automatic chunk" : "fused");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--peak=", 7) == 0) return peak_main(std::atoll(argv[i] + 7));
  return strata_bench::run_benchmarks(argc, argv, [] {
    // -1: unfused; 0: the automatic chunk; then fixed chunk sizes.
    for (const std::int64_t chunk : {-1, 0, 64, 1024})
      benchmark::RegisterBenchmark("lm_loss/rows:1024/d:768/vocab:50304", BM_lm_loss)
          ->Arg(chunk)
          ->ArgName("chunk")
          ->Iterations(2)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
  });
}
