// `strata attention --q Q.npy --k K.npy --v V.npy --out OUT.npy ...`: the
// user's arrays through the op. Everything that can fail does so before the
// first output byte is written, and outputs appear all at once (output_files.hpp).
#include <iostream>
#include <sstream>
#include <tuple>

#include "attention_cli.hpp"
#include "commands.hpp"
#include "output_files.hpp"
#include "strata/npy.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << shape_str(t.shape()) << ' ' << dtype_name(t.dtype());
  if (t.dim() > 1 && !t.is_contiguous()) os << " (Fortran order, strided view)";
  return os.str();
}

void check_usage(const AttentionCli& cli) {
  if (cli.q.empty() || cli.k.empty() || cli.v.empty())
    throw UsageError(
        "attention: --q, --k and --v go together (give all three, or none for the "
        "built-in problem)");
  if (cli.out.empty()) throw UsageError("attention: --out OUT.npy is required with --q/--k/--v");
}

}  // namespace

int run_attention_files(const AttentionCli& cli) {
  check_usage(cli);
  const AttentionOptions base = make_options(cli);
  const BackendInfo* backend = require_backend(cli.backend);
  // Outputs are checked against each other and the inputs by file identity
  // before anything is loaded or computed (output_files.hpp).
  std::vector<NamedPath> outputs{{cli.out, "--out"}};
  if (!cli.lse.empty()) outputs.push_back({cli.lse, "--lse"});
  std::vector<NamedPath> inputs{{cli.q, "--q"}, {cli.k, "--k"}, {cli.v, "--v"}};
  if (!cli.mask.empty()) inputs.push_back({cli.mask, "--mask"});
  check_outputs(outputs, inputs);

  Tensor q = load_npy(cli.q, "--q");
  Tensor k = load_npy(cli.k, "--k");
  Tensor v = load_npy(cli.v, "--v");
  for (const auto& [t, name, path] :
       {std::tuple{&q, "--q", &cli.q}, {&k, "--k", &cli.k}, {&v, "--v", &cli.v}})
    if (!is_floating(t->dtype()))
      throw Error(std::string(name) + " '" + *path + "': dtype " +
                  std::string(dtype_name(t->dtype())) +
                  " is not supported for q, k and v (float32, float64 or float16; bool is for "
                  "--mask)");
  if (!cli.dtype.empty()) {  // converted on load (bf16 has no .npy dtype of its own)
    const DType want = parse_dtype(cli.dtype);
    q = q.to(want);
    k = k.to(want);
    v = v.to(want);
  }
  const std::string layout = "q " + describe(q) + ", k " + describe(k) + ", v " + describe(v);

  AttentionOptions opt = base;
  if (!cli.mask.empty()) {
    opt.mask = load_npy(cli.mask, "--mask");
    // A float mask is added to scores of q's dtype; numpy makes float64 by
    // default, so a float mask of another width is converted, not refused.
    if (opt.mask.dtype() != DType::boolean && opt.mask.dtype() != q.dtype())
      opt.mask = opt.mask.to(q.dtype());
  }

  const Device dev = backend ? Device{backend->device, 0} : Device::cpu();
  if (!dev.is_cpu()) {
    q = q.to(dev);
    k = k.to(dev);
    v = v.to(dev);
    if (opt.mask.defined()) opt.mask = opt.mask.to(dev);
  }

  const std::string kernel = softmax_attention_kernel(q, k, v, opt);
  AttentionResult r;
  const int runs = cli.repeat > 0 ? cli.repeat : 1;
  const auto ms = time_runs(0, runs, dev, [&] {
    if (cli.lse.empty()) {
      r.out = softmax_attention(q, k, v, opt);
    } else {
      r = softmax_attention_lse(q, k, v, opt);
    }
  });

  std::vector<std::pair<NamedPath, std::string>> files{{outputs[0], npy_bytes(r.out, kNpyOut)}};
  if (!cli.lse.empty()) files.emplace_back(outputs[1], npy_bytes(r.lse, kNpyOut));
  write_outputs(files);

  // The kernel's name may carry " (via f32)" (f16/bf16 on a backend that
  // converts them); the registry knows it by the name before that.
  std::string ran_on = backend ? backend->name : "auto";
  if (!backend)
    for (const KernelInfo& ki : Registry::get().kernels("softmax_attention"))
      if (kernel.compare(0, kernel.find(' '), ki.name) == 0) ran_on = "auto -> " + ki.backend;
  std::cout << "strata attention: " << layout << "\n"
            << "  backend " << ran_on << ", kernel " << kernel << ", " << runs
            << (runs == 1 ? " run" : " runs") << ", median " << fmt("%.3f", median(ms)) << " ms\n"
            << "  wrote " << cli.out << ' ' << shape_str(r.out.shape()) << ' '
            << dtype_name(npy_dtype(r.out.dtype(), kNpyOut));
  if (!cli.lse.empty())
    std::cout << " and " << cli.lse << ' ' << shape_str(r.lse.shape()) << ' '
              << dtype_name(npy_dtype(r.lse.dtype(), kNpyOut));
  std::cout << std::endl;
  return kExitOk;
}

}  // namespace strata::cli
