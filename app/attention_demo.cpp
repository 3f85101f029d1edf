// `strata attention` without files: the README's main job. One problem
// (default batch 1, 8 heads, M = N = 1024, d = 64, f32, seed 42) on every
// available backend, timed, and checked against the reference backend run
// in float64 on the same (widened) inputs.
#include <iostream>

#include "attention_cli.hpp"
#include "commands.hpp"
#include "strata/harness.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

// Relative Frobenius error allowed against the f64 truth. With randn
// inputs and scale 1/sqrt(d) the scores are O(1), so the problem is well
// conditioned and a naive f32 computation lands near 1e-7 (a few units of
// f32 rounding, 6e-8, grown by sums over d and N); 1e-5 leaves a wide margin
// for blocked or reordered summation while still catching any indexing or
// masking bug, whose errors are O(1). f64 inputs accumulate in f64
// everywhere, hence 1e-12.
double tolerance(DType dt) { return dt == DType::f64 ? 1e-12 : 1e-5; }

struct Problem {
  Shape q, k, v;
  DType dtype;
};

Problem make_problem(const AttentionCli& cli) {
  Problem p;
  const std::int64_t hkv = cli.kv_heads > 0 ? cli.kv_heads : cli.heads;
  const std::int64_t dv = cli.dv > 0 ? cli.dv : cli.d;
  p.q = {cli.batch, cli.heads, cli.m, cli.d};
  p.k = {cli.batch, hkv, cli.n, cli.d};
  p.v = {cli.batch, hkv, cli.n, dv};
  if (cli.dtype != "f32" && cli.dtype != "f64")
    throw UsageError("--dtype '" + cli.dtype + "': the built-in problem runs f32 or f64");
  p.dtype = parse_dtype(cli.dtype);
  return p;
}

std::string problem_line(const AttentionCli& cli, const Problem& p) {
  return "batch " + std::to_string(cli.batch) + ", heads " + std::to_string(p.q[1]) +
         (p.k[1] != p.q[1] ? " (kv heads " + std::to_string(p.k[1]) + ")" : "") + ", M " +
         std::to_string(cli.m) + ", N " + std::to_string(cli.n) + ", d " + std::to_string(cli.d) +
         ", dv " + std::to_string(p.v[3]) + ", " + std::string(dtype_name(p.dtype)) + ", causal " +
         cli.causal + (cli.window.empty() ? "" : ", window " + cli.window) + ", seed " +
         std::to_string(cli.seed);
}

}  // namespace

int run_attention_demo(const AttentionCli& cli) {
  if (!cli.mask.empty() || !cli.out.empty() || !cli.lse.empty())
    throw UsageError("attention: --mask, --out and --lse need --q, --k and --v");
  const Problem p = make_problem(cli);
  AttentionOptions opt = make_options(cli);
  const BackendInfo* only = require_backend(cli.backend);
  const Tensor q = Tensor::randn(p.q, cli.seed, p.dtype);
  const Tensor k = Tensor::randn(p.k, cli.seed + 1, p.dtype);
  const Tensor v = Tensor::randn(p.v, cli.seed + 2, p.dtype);

  std::cout << "strata attention: " << problem_line(cli, p) << "\n";
  progress("computing the float64 reference...");
  AttentionOptions ref_opt = opt;
  ref_opt.backend = "reference";
  const Tensor truth =
      softmax_attention(q.to(DType::f64), k.to(DType::f64), v.to(DType::f64), ref_opt);
  progress("");
  std::cout << "\n";

  const double flop = 2.0 * static_cast<double>(p.q[3] + p.v[3]) *
                      static_cast<double>(kept_pairs(cli.m, cli.n, opt)) *
                      static_cast<double>(cli.batch * cli.heads);
  const double tol = tolerance(p.dtype);
  const int repeat = cli.repeat > 0 ? cli.repeat : 5;
  Table table(
      {"backend", "kernel", "runs", "median ms", "GFLOP/s", "max abs err", "rel err", "status"});
  std::vector<std::string> notes;
  bool all_ok = true;
  int ran = 0;
  for (const BackendInfo& b : Registry::get().backends()) {
    if (only && b.name != only->name) continue;
    if (!b.compiled || !b.available) {
      table.add({b.name, "-", "-", "-", "-", "-", "-", b.compiled ? "unavailable" : "not built"});
      notes.push_back(b.name + ": " + b.why_not);
      continue;
    }
    const Device dev{b.device, 0};
    const Tensor qd = q.to(dev), kd = k.to(dev), vd = v.to(dev);
    AttentionOptions bopt = opt;
    bopt.backend = b.name;
    std::string kernel;
    try {
      kernel = softmax_attention_kernel(qd, kd, vd, bopt);
    } catch (const Error& e) {
      table.add({b.name, "-", "-", "-", "-", "-", "-", "unsupported"});
      notes.push_back(b.name + ": " + e.what());
      continue;
    }
    // The reference is the yardstick, not a contender: fewer runs, no warm-up.
    const bool is_ref = b.name == "reference";
    const int runs = is_ref ? std::min(repeat, 2) : repeat;
    Tensor out;
    progress("running " + b.name + "...");
    const auto ms =
        time_runs(is_ref ? 0 : 1, runs, dev, [&] { out = softmax_attention(qd, kd, vd, bopt); });
    progress("");
    const harness::ErrorStats e = harness::compare_values(out, truth);
    const bool mismatch = e.nan_mismatch + e.inf_mismatch > 0;
    const bool ok = !mismatch && e.rel_fro <= tol;
    all_ok = all_ok && ok;
    ++ran;
    const double med = median(ms);
    table.add({b.name, kernel, std::to_string(runs), fmt("%.3f", med),
               med > 0 ? fmt("%.2f", flop / (med * 1e6)) : "-", fmt("%.2e", e.max_abs),
               fmt("%.2e", e.rel_fro), ok ? "ok" : (mismatch ? "NaN/inf MISMATCH" : "MISMATCH")});
  }
  table.print(std::cout);
  for (const std::string& n : notes) std::cout << "  note: " << n << "\n";
  std::cout << "\nerrors against the reference backend in float64; tolerance: relative "
               "Frobenius error <= "
            << fmt("%.0e", tol) << " (docs/cli.md says why)\n";
  if (ran == 0) throw Error("attention: no backend could run the problem");
  std::cout << (all_ok ? "all backends agree\n" : "SOME BACKENDS DISAGREE\n");
  return all_ok ? kExitOk : kExitMismatch;
}

}  // namespace strata::cli
