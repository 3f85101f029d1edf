// `strata attention` without files: the README's main job. One problem
// (default batch 1, 8 heads, M = N = 1024, d = 64, f32, seed 42) on every
// available backend, timed, and checked against the reference backend run
// in float64 on the same (widened) inputs, with the harness's self-calibrated
// tolerance (harness::attention_tolerance). Sizes are checked against int64
// overflow and available memory before anything is allocated; a problem too
// large for the reference is still timed, without the comparison.
#include <bit>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <optional>
#include <tuple>

#include "attention_cli.hpp"
#include "commands.hpp"
#include "strata/harness.hpp"
#include "strata/host_memory.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

struct Problem {
  Shape q, k, v, out;
  DType dtype;
  std::int64_t q_n = 0, k_n = 0, v_n = 0, out_n = 0;  // elements
};

// Checked products: nullopt when the result does not fit.
std::optional<std::int64_t> elements(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t x : s)
    if (__builtin_mul_overflow(n, x, &n)) return std::nullopt;
  return n;
}
std::optional<std::uint64_t> mul(std::optional<std::uint64_t> a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (!a || __builtin_mul_overflow(*a, b, &r)) return std::nullopt;
  return r;
}
std::optional<std::uint64_t> add(std::optional<std::uint64_t> a, std::optional<std::uint64_t> b) {
  std::uint64_t r = 0;
  if (!a || !b || __builtin_add_overflow(*a, *b, &r)) return std::nullopt;
  return r;
}

std::string bytes_str(std::optional<std::uint64_t> b) {
  if (!b) return "more than 2^64 bytes";
  return std::to_string(*b) + " bytes (" + fmt("%.1f", static_cast<double>(*b) / (1 << 20)) +
         " MiB)";
}

Problem make_problem(const AttentionCli& cli) {
  Problem p;
  const std::int64_t hkv = cli.kv_heads > 0 ? cli.kv_heads : cli.heads;
  const std::int64_t dv = cli.dv > 0 ? cli.dv : cli.d;
  p.q = {cli.batch, cli.heads, cli.m, cli.d};
  p.k = {cli.batch, hkv, cli.n, cli.d};
  p.v = {cli.batch, hkv, cli.n, dv};
  p.out = {cli.batch, cli.heads, cli.m, dv};
  const std::string dt = cli.dtype.empty() ? "f32" : cli.dtype;
  if (dt != "f32" && dt != "f64")
    throw UsageError("--dtype '" + dt + "': the built-in problem runs f32 or f64");
  p.dtype = parse_dtype(dt);
  for (const auto& [shape, n, name] : {std::tuple{&p.q, &p.q_n, "q"},
                                       {&p.k, &p.k_n, "k"},
                                       {&p.v, &p.v_n, "v"},
                                       {&p.out, &p.out_n, "the output"}}) {
    const auto e = elements(*shape);
    if (!e)
      throw Error(std::string("attention: the built-in problem's ") + name + " " +
                  shape_str(*shape) +
                  " has more than 2^63 elements (--batch, --heads, --m, --n, --d, --dv)");
    *n = *e;
  }
  return p;
}

// Bytes of the problem itself: q, k, v and the output in its dtype.
std::optional<std::uint64_t> problem_bytes(const Problem& p) {
  const auto n = add(add(static_cast<std::uint64_t>(p.q_n), static_cast<std::uint64_t>(p.k_n)),
                     add(static_cast<std::uint64_t>(p.v_n), static_cast<std::uint64_t>(p.out_n)));
  return mul(n, itemsize(p.dtype));
}

// Bytes the comparison adds: f64 copies of q, k, v, the f64 truth and the
// naive same-dtype output, and the reference's dense matrices for one head
// at a time (S M x N, Q, K, V; attention_reference.cpp) in f64.
std::optional<std::uint64_t> reference_bytes(const Problem& p) {
  const auto M = static_cast<std::uint64_t>(p.q[2]), N = static_cast<std::uint64_t>(p.k[2]);
  const auto d = static_cast<std::uint64_t>(p.q[3]), dv = static_cast<std::uint64_t>(p.v[3]);
  auto head = add(mul(M, N), add(mul(M, d), add(mul(N, d), mul(N, dv))));
  const auto copies =
      add(add(static_cast<std::uint64_t>(p.q_n), static_cast<std::uint64_t>(p.k_n)),
          add(static_cast<std::uint64_t>(p.v_n), mul(static_cast<std::uint64_t>(p.out_n), 2)));
  return mul(add(head, copies), 8);
}

// The harness's bounds, plus with --precision medium on f32 3x the error of
// exact arithmetic on TF32-rounded q, k, v (docs/guide/attention.md,
// "Precision"): what a correct TF32 kernel may add on top of f32 rounding.
struct Tolerance : harness::AttentionTolerance {
  bool tf32 = false;
  double tf32_rel = 0, tf32_abs = 0;
};

// x rounded to TF32 (10 mantissa bits) to nearest, ties away from zero: what
// cvt.rna.tf32.f32 gives the tensor cores.
Tensor tf32_rounded_f64(const Tensor& x) {
  std::vector<float> v = x.to_vector<float>();
  for (float& e : v) {
    if (!std::isfinite(e)) continue;
    e = std::bit_cast<float>((std::bit_cast<std::uint32_t>(e) + 0x1000u) & 0xffffe000u);
  }
  return Tensor::from_vector(v, x.shape()).to(DType::f64);
}

// q, k, v: host tensors in the problem's dtype; truth: the f64 reference
// output for them, computed with `ref_opt` (the reference backend).
Tolerance demo_tolerance(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionOptions& opt, const AttentionOptions& ref_opt,
                         const Tensor& truth) {
  Tolerance t;
  static_cast<harness::AttentionTolerance&>(t) = harness::attention_tolerance(q, k, v, opt, truth);
  if (q.dtype() == DType::f32 && opt.precision == Precision::medium) {
    const Tensor o32 =
        softmax_attention(tf32_rounded_f64(q), tf32_rounded_f64(k), tf32_rounded_f64(v), ref_opt);
    const harness::ErrorStats td = harness::compare_values(o32, truth);
    t.tf32 = true;
    t.tf32_rel = td.rel_fro;
    t.tf32_abs = td.max_abs;
    t.rel_fro += 3 * td.rel_fro;
    t.max_abs += 3 * td.max_abs;
  }
  return t;
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

  // Sizes before any allocation: the problem must fit in memory; the
  // comparison with the reference is made only when it fits too.
  const std::uint64_t avail = available_host_memory_bytes();
  const auto need = problem_bytes(p);
  if (!need || *need > avail)
    throw Error("attention: the built-in problem (" + problem_line(cli, p) + ") needs " +
                bytes_str(need) + " for q, k, v and the output, but only " + bytes_str(avail) +
                " of memory are available; choose smaller --batch, --heads, --m, --n, --d or --dv");
  const auto ref_need = add(need, reference_bytes(p));
  const bool compare = ref_need && *ref_need <= avail;
  const std::string skip_why =
      compare ? ""
              : "the reference materialises the " + std::to_string(cli.m) + " x " +
                    std::to_string(cli.n) + " score matrix and would need " + bytes_str(ref_need) +
                    " in all, but only " + bytes_str(avail) + " of memory are available";
  if (only && only->name == "reference" && !compare)
    throw Error("--backend reference: " + skip_why);

  const Tensor q = Tensor::randn(p.q, cli.seed, p.dtype);
  const Tensor k = Tensor::randn(p.k, cli.seed + 1, p.dtype);
  const Tensor v = Tensor::randn(p.v, cli.seed + 2, p.dtype);

  std::cout << "strata attention: " << problem_line(cli, p) << "\n";
  Tensor truth;
  Tolerance tol;
  if (compare) {
    progress("computing the float64 reference...");
    AttentionOptions ref_opt = opt;
    ref_opt.backend = "reference";
    truth = softmax_attention(q.to(DType::f64), k.to(DType::f64), v.to(DType::f64), ref_opt);
    progress("measuring the naive " + std::string(dtype_name(p.dtype)) + " error...");
    tol = demo_tolerance(q, k, v, opt, ref_opt, truth);
    progress("");
  } else {
    std::cout << "comparison with the reference skipped: " << skip_why << "\n";
  }
  std::cout << "\n";

  const double flop = 2.0 * static_cast<double>(p.q[3] + p.v[3]) *
                      static_cast<double>(kept_pairs(cli.m, cli.n, opt)) *
                      static_cast<double>(cli.batch) * static_cast<double>(cli.heads);
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
    // The reference is the yardstick, not a contender: fewer runs, no
    // warm-up, and not at all when it does not fit.
    const bool is_ref = b.name == "reference";
    if (is_ref && !compare) {
      table.add({b.name, "-", "-", "-", "-", "-", "-", "too large"});
      notes.push_back(b.name + ": skipped, too large for the memory (see above)");
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
    const int runs = is_ref ? std::min(repeat, 2) : repeat;
    Tensor out;
    progress("running " + b.name + "...");
    const auto ms =
        time_runs(is_ref ? 0 : 1, runs, dev, [&] { out = softmax_attention(qd, kd, vd, bopt); });
    progress("");
    ++ran;
    const double med = median(ms);
    const std::string rate = med > 0 ? fmt("%.2f", flop / (med * 1e6)) : "-";
    if (!compare) {
      table.add(
          {b.name, kernel, std::to_string(runs), fmt("%.3f", med), rate, "-", "-", "not checked"});
      continue;
    }
    const harness::ErrorStats e = harness::compare_values(out, truth);
    const bool mismatch = e.nan_mismatch + e.inf_mismatch > 0;
    const bool ok = !mismatch && e.rel_fro <= tol.rel_fro && e.max_abs <= tol.max_abs;
    all_ok = all_ok && ok;
    table.add({b.name, kernel, std::to_string(runs), fmt("%.3f", med), rate, fmt("%.2e", e.max_abs),
               fmt("%.2e", e.rel_fro), ok ? "ok" : (mismatch ? "NaN/inf MISMATCH" : "MISMATCH")});
  }
  table.print(std::cout);
  for (const std::string& n : notes) std::cout << "  note: " << n << "\n";
  if (ran == 0) throw Error("attention: no backend could run the problem");
  if (!compare) {
    std::cout << "\nnot compared with the reference (see above); timings only\n";
    return kExitOk;
  }
  std::cout << "\nerrors against the reference backend in float64; tolerance (the harness's rule: "
               "3x a naive "
            << dtype_name(p.dtype) << " computation's error on this problem, plus a floor): "
            << "rel. Frobenius <= " << fmt("%.2e", tol.rel_fro) << " (naive "
            << fmt("%.2e", tol.naive_rel_fro) << "), max abs <= " << fmt("%.2e", tol.max_abs)
            << " (naive " << fmt("%.2e", tol.naive_max_abs) << ")\n";
  if (tol.tf32)
    std::cout << "--precision medium: the bounds add 3x the error of exact arithmetic on "
                 "TF32-rounded inputs (rel. Frobenius "
              << fmt("%.2e", tol.tf32_rel) << ", max abs " << fmt("%.2e", tol.tf32_abs) << ")\n";
  std::cout << (all_ok ? "all backends agree\n" : "SOME BACKENDS DISAGREE\n");
  return all_ok ? kExitOk : kExitMismatch;
}

}  // namespace strata::cli
