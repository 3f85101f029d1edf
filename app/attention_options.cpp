// Command-line values -> AttentionOptions, backend checks, FLOP counts.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "attention_cli.hpp"
#include "strata/device_runtime.hpp"
#include "strata/host_memory.hpp"

namespace strata::cli {
namespace {

// One side of --window: a non-negative count, or "inf" / -1 for unbounded.
std::int64_t parse_window_side(const std::string& s, const std::string& whole) {
  if (s == "inf" || s == "-1") return -1;
  std::size_t used = 0;
  long long v = -2;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v < 0)
    throw Error("--window '" + whole +
                "': expected L,R with each side a non-negative integer or 'inf'");
  return v;
}

// The value of the choice named v, else an Error listing the names
// ("expected a, b or c").
template <class E, std::size_t N>
E choose(const char* flag, const std::string& v, const std::pair<const char*, E> (&choices)[N]) {
  for (const auto& [name, value] : choices)
    if (v == name) return value;
  std::string names = choices[0].first;
  for (std::size_t i = 1; i < N; ++i)
    names += (i + 1 == N ? " or " : ", ") + std::string(choices[i].first);
  throw Error(std::string(flag) + " '" + v + "': expected " + names);
}

}  // namespace

AttentionOptions make_options(const AttentionCli& cli) {
  AttentionOptions opt;
  opt.causal = choose<Causal>("--causal", cli.causal,
                              {{"none", Causal::none},
                               {"bottom-right", Causal::bottom_right},
                               {"top-left", Causal::top_left}});
  if (!cli.window.empty()) {
    const std::size_t comma = cli.window.find(',');
    if (comma == std::string::npos)
      throw Error("--window '" + cli.window + "': expected L,R (for example 128,0 or inf,0)");
    opt.window = std::pair{parse_window_side(cli.window.substr(0, comma), cli.window),
                           parse_window_side(cli.window.substr(comma + 1), cli.window)};
  }
  opt.window_top_left = choose<bool>("--window-align", cli.window_align,
                                     {{"bottom-right", false}, {"top-left", true}});
  if (cli.has_scale) {
    if (!std::isfinite(cli.scale))
      throw Error("--scale: must be finite, got " + std::to_string(cli.scale));
    opt.scale = cli.scale;
  }
  opt.precision = choose<Precision>(
      "--precision", cli.precision,
      {{"highest", Precision::highest}, {"high", Precision::high}, {"medium", Precision::medium}});
  opt.backend = cli.backend;
  return opt;
}

const BackendInfo* require_backend(const std::string& name) {
  if (name == "auto") return nullptr;
  const Registry& reg = Registry::get();
  const BackendInfo* b = reg.backend(name);
  if (b == nullptr) {
    std::string known = "auto";
    for (const BackendInfo& x : reg.backends()) known += ", " + x.name;
    throw Error("--backend: unknown backend '" + name + "' (known: " + known + ")");
  }
  if (!b->compiled || !b->available)
    throw Error("--backend " + name + ": " +
                (b->why_not.empty() ? std::string(b->compiled ? "not available" : "not built")
                                    : b->why_not));
  return b;
}

std::int64_t kept_pairs(std::int64_t M, std::int64_t N, const AttentionOptions& opt) {
  // The causal band and the window have their own alignments, as in the op
  // (docs/guide/attention.md): --window-align top-left moves the window only.
  const std::int64_t causal_off = opt.causal == Causal::top_left ? 0 : N - M;
  const bool window_top_left = opt.causal == Causal::top_left || opt.window_top_left;
  const std::int64_t window_off = window_top_left ? 0 : N - M;
  std::int64_t total = 0;
  for (std::int64_t i = 0; i < M; ++i) {
    std::int64_t lo = 0, hi = N - 1;
    if (opt.causal != Causal::none) hi = std::min(hi, i + causal_off);
    if (opt.window) {
      if (opt.window->first >= 0) lo = std::max(lo, i + window_off - opt.window->first);
      if (opt.window->second >= 0) hi = std::min(hi, i + window_off + opt.window->second);
    }
    total += std::max<std::int64_t>(0, hi - lo + 1);
  }
  return total;
}

void sync_device(Device dev) {
  if (dev.is_cpu()) return;
  if (DeviceRuntime* rt = device_runtime(dev.type)) rt->synchronize(dev.index);
}

}  // namespace strata::cli
