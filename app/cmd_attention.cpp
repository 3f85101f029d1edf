// `strata attention`: wires the command line; the work is in
// attention_files.cpp (the user's .npy arrays) and attention_demo.cpp (the
// built-in problem on every backend).
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

#include "attention_cli.hpp"
#include "commands.hpp"

namespace strata::cli {
namespace {

// Numbers are parsed here rather than by CLI11, whose messages ("Could not
// convert: --scale = abc", ranges printed as 300-digit doubles) are not the
// tool's one-line style.
template <class T>
T parse_number(const std::string& name, const std::string& s, T lo, T hi) {
  T v{};
  bool ok = false;
  if constexpr (std::is_floating_point_v<T>) {
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    ok = !s.empty() && end == s.c_str() + s.size();
  } else {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ok = !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
  }
  if (!ok)
    throw UsageError(name + " '" + s + "': expected " +
                     (std::is_floating_point_v<T> ? "a number" : "an integer") +
                     (std::is_floating_point_v<T> ? "" : " from " + std::to_string(lo)));
  // A float's range (finite) is checked with the other options (make_options).
  if (!std::is_floating_point_v<T> && !(v >= lo && v <= hi))
    throw UsageError(name + " " + s + ": must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi));
  return v;
}

template <class T>
CLI::Option* add_number(CLI::App* cmd, const std::string& name, T& out, const std::string& help,
                        T lo = std::numeric_limits<T>::lowest(),
                        T hi = std::numeric_limits<T>::max()) {
  return cmd
      ->add_option_function<std::string>(
          name, [&out, name, lo, hi](const std::string& s) { out = parse_number(name, s, lo, hi); },
          help)
      ->type_name(std::is_floating_point_v<T> ? "FLOAT" : "INT");
}

}  // namespace

void add_attention_command(CLI::App& root, int& status) {
  static AttentionCli cli;  // CLI11 binds to it; lives as long as the app
  CLI::App* cmd = root.add_subcommand(
      "attention",
      "Softmax attention. Without --q/--k/--v: a built-in problem on every available backend, "
      "timed and checked against the f64 reference. With them: your .npy arrays, result to --out");

  const char* files = "Your arrays (.npy, C or Fortran order)";
  cmd->add_option("--q", cli.q, "Queries [..., Hq, M, d], float32 or float64")->group(files);
  cmd->add_option("--k", cli.k, "Keys [..., Hkv, N, d], same dtype as q")->group(files);
  cmd->add_option("--v", cli.v, "Values [..., Hkv, N, dv], same dtype as q")->group(files);
  cmd->add_option("--mask", cli.mask,
                  "Mask broadcastable to [..., Hq, M, N]: bool (true = keep) or float (added to "
                  "the scaled scores)")
      ->group(files);
  cmd->add_option("--out", cli.out, "Output [..., Hq, M, dv], written in C order, q's dtype")
      ->group(files);
  cmd->add_option("--lse", cli.lse, "Also write the log-sum-exp [..., Hq, M]")->group(files);

  const char* op = "Options of the op";
  cmd->add_option("--causal", cli.causal,
                  "none, bottom-right (query i sees keys j <= i + N - M) or top-left (j <= i)")
      ->group(op);
  cmd->add_option("--window", cli.window,
                  "Sliding window L,R: query i keeps keys i+off-L .. i+off+R; 'inf' for an "
                  "unbounded side (write --window=-1,0 if a side starts with '-')")
      ->group(op);
  cmd->add_option("--window-align", cli.window_align,
                  "bottom-right (off = N - M) or top-left (off = 0)")
      ->group(op);
  add_number(cmd, "--scale", cli.scale, "Score scale (default 1/sqrt(d))")->group(op);
  cmd->add_option("--backend", cli.backend, "auto, reference, cpu or cuda")->group(op);
  cmd->add_option("--precision", cli.precision,
                  "f32 products: highest (exact f32, default), high (3xTF32 on the tensor cores, "
                  "f32-accurate) or medium (TF32); cuda only, other backends and dtypes run "
                  "highest")
      ->group(op);
  add_number(cmd, "--repeat", cli.repeat,
             "Timed runs (default 5 for the built-in problem, 1 with files)", 1, 1000000)
      ->group(op);

  const char* demo = "Built-in problem (without --q/--k/--v)";
  add_number<std::int64_t>(cmd, "--batch", cli.batch, "Batch size (default 1)", 0)->group(demo);
  add_number<std::int64_t>(cmd, "--heads", cli.heads, "Query heads (default 8)", 1)->group(demo);
  add_number<std::int64_t>(cmd, "--kv-heads", cli.kv_heads, "Key/value heads (default: --heads)", 1)
      ->group(demo);
  add_number<std::int64_t>(cmd, "--m", cli.m, "Queries per head (default 1024)", 0)->group(demo);
  add_number<std::int64_t>(cmd, "--n", cli.n, "Keys per head (default 1024)", 0)->group(demo);
  add_number<std::int64_t>(cmd, "--d", cli.d, "Head dim of q and k (default 64)", 1)->group(demo);
  add_number<std::int64_t>(cmd, "--dv", cli.dv, "Head dim of v (default: --d)", 1)->group(demo);
  cmd->add_option(
         "--dtype", cli.dtype,
         "Built-in problem: f32 (default) or f64. With --q/--k/--v: f32, f64, f16 or bf16, "
         "the dtype the inputs are converted to on load (default: as stored; NumPy has "
         "no bfloat16, so bf16 results are written as float32)")
      ->check(CLI::IsMember({"f32", "f64", "f16", "bf16"}));
  add_number(cmd, "--seed", cli.seed, "Seed of Tensor::randn (default 42)")->group(demo);

  cmd->callback([cmd, demo, &status] {
    cli.has_scale = cmd->count("--scale") > 0;
    if (cli.file_mode()) {
      // Silently ignoring a size the user typed would mislead.
      for (const CLI::Option* o : cmd->get_options())
        if (o->get_group() == demo && o->count() > 0)
          throw UsageError("attention: " + o->get_name() +
                           " sets the built-in problem; it does not apply with --q/--k/--v");
    }
    status = cli.file_mode() ? run_attention_files(cli) : run_attention_demo(cli);
  });
}

}  // namespace strata::cli
