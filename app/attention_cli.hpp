#pragma once
// Shared pieces of `strata attention` (file mode and the built-in problem).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/attention.hpp"
#include "strata/registry.hpp"

namespace strata::cli {

// Everything `strata attention` accepts on its command line.
struct AttentionCli {
  // File mode.
  std::string q, k, v, mask, out, lse;
  // Options of the op, in both modes.
  std::string causal = "none";  // none | bottom-right | top-left
  std::string window;           // "L,R"; "inf" or -1 for an unbounded side
  std::string window_align = "bottom-right";
  double scale = 0.0;
  bool has_scale = false;
  std::string backend = "auto";
  std::string precision = "highest";  // highest | high | medium (f32 only)
  int repeat = 0;                     // 0: the mode's default
  // Built-in problem.
  std::int64_t batch = 1, heads = 8, kv_heads = 0, m = 1024, n = 1024, d = 64, dv = 0;
  // Built-in problem: f32 (default) or f64. With --q/--k/--v: f32, f64,
  // f16 or bf16 to convert the loaded inputs to (default: as stored).
  std::string dtype;
  std::uint64_t seed = 42;
  bool file_mode() const { return !q.empty() || !k.empty() || !v.empty(); }
};

// The op's options from the command line; throws strata::Error on bad values.
AttentionOptions make_options(const AttentionCli& cli);

// Throws unless `name` is "auto" or a compiled and available backend; returns
// its registry entry (nullptr for "auto").
const BackendInfo* require_backend(const std::string& name);

// Query/key pairs kept by the causal and window options (per head), for
// FLOP counts: 2 * (d + dv) FLOP per kept pair.
std::int64_t kept_pairs(std::int64_t M, std::int64_t N, const AttentionOptions& opt);

// Blocks until work queued on `dev` is done (no-op on the host).
void sync_device(Device dev);

// Wall-clock milliseconds of `runs` calls of f, after `warmup` untimed ones.
template <class F>
std::vector<double> time_runs(int warmup, int runs, Device dev, F&& f) {
  for (int i = 0; i < warmup; ++i) f();
  sync_device(dev);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    sync_device(dev);
    const auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return ms;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

int run_attention_files(const AttentionCli& cli);
int run_attention_demo(const AttentionCli& cli);

}  // namespace strata::cli
