// `strata info`: what this binary was built with and what it can run on.
#include <omp.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "strata/detail/module.hpp"
#include "strata/device_runtime.hpp"
#include "strata/registry.hpp"
#include "strata/tuning.hpp"
#include "strata/version.hpp"
#include "table.hpp"

namespace strata::cli {
namespace {

const char* yes_no(bool b) { return b ? "yes" : "no"; }

void print_backends(std::ostream& os, const Registry& reg) {
  os << "backends:\n";
  Table t({"name", "device", "compiled", "available", "notes"});
  for (const BackendInfo& b : reg.backends()) {
    // Why a backend cannot run matters more than what it is.
    const std::string notes = b.why_not.empty() ? b.description : b.why_not;
    t.add({b.name, std::string(device_type_name(b.device)), yes_no(b.compiled), yes_no(b.available),
           notes});
  }
  t.print(os);
  // Backends loaded from modules on first use (a CUDA build's cuda): listing
  // the backends above loaded them.
  for (const std::string& m : detail::loaded_modules()) os << "module: " << m << "\n";
}

// One row per (op, backend, kernel), its dtypes joined: every op's kernels
// per backend and dtype, in a table that still fits a terminal.
struct KernelRow {
  std::string op, backend, dtypes, kernel;
};

std::vector<KernelRow> kernel_rows(const Registry& reg) {
  std::vector<KernelRow> rows;
  for (const std::string& op : reg.ops()) {
    const auto kernels = reg.kernels(op);
    std::vector<bool> done(kernels.size(), false);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (done[i]) continue;
      KernelRow row{op, kernels[i].backend, "", kernels[i].name};
      for (std::size_t j = i; j < kernels.size(); ++j) {
        if (done[j] || kernels[j].backend != row.backend || kernels[j].name != row.kernel) continue;
        done[j] = true;
        row.dtypes += (row.dtypes.empty() ? "" : " ") + std::string(dtype_name(kernels[j].dtype));
      }
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

// softmax_attention runs f16/bf16 on a backend without kernels of its own
// for them by converting to f32 and running the f32 kernel
// (ops/src/attention.cpp): the f32 row says so, rather than suggesting that
// half types are refused there.
void note_attention_detour(const Registry& reg, std::vector<KernelRow>& rows) {
  const OpId op = reg.op_id("softmax_attention");
  for (KernelRow& row : rows) {
    if (row.op != "softmax_attention" ||
        (" " + row.dtypes + " ").find(" f32 ") == std::string::npos)
      continue;
    const auto& all = reg.backends();  // a BackendId is an index into it
    for (BackendId b = 0; b < static_cast<BackendId>(all.size()); ++b) {
      if (all[b].name != row.backend) continue;
      std::string via;
      for (DType dt : {DType::bf16, DType::f16})
        if (!reg.has_kernel(op, b, dt))
          via += (via.empty() ? "" : "/") + std::string(dtype_name(dt));
      if (!via.empty()) row.dtypes += ", " + via + " via f32";
    }
  }
}

void print_kernels(std::ostream& os, const Registry& reg) {
  std::vector<KernelRow> rows = kernel_rows(reg);
  note_attention_detour(reg, rows);
  os << "kernels (op, backend, dtypes):\n";
  Table t({"op", "backend", "dtypes", "kernel"});
  for (const KernelRow& r : rows) t.add({r.op, r.backend, r.dtypes, r.kernel});
  t.print(os);
}

// One line in place of the kernel table.
void print_op_count(std::ostream& os, const Registry& reg) {
  int backends = 0;
  for (const BackendInfo& b : reg.backends()) backends += b.compiled ? 1 : 0;
  os << "ops: " << reg.ops().size() << " ops, " << kernel_rows(reg).size() << " kernels on "
     << backends << " compiled backends (strata info --kernels lists them; strata info "
     << "--tuning the STRATA_* switches)\n";
}

// The switchboard (strata/tuning.hpp): each STRATA_* environment switch the
// library reads, the value this process runs with, and what it does.
void print_tuning(std::ostream& os) {
  os << "tuning (STRATA_* environment switches, read once per process):\n";
  Table t({"switch", "value", "what"});
  for (const TuningSwitch& s : tuning_switches(tuning())) t.add({s.name, s.value, s.help});
  t.print(os);
}

void print_devices(std::ostream& os) {
  os << "devices:\n";
  Table t({"device", "description"});
  t.add({"cpu", std::to_string(std::thread::hardware_concurrency()) + " hardware threads, " +
                    std::to_string(omp_get_max_threads()) + " OpenMP threads"});
  const DeviceRuntime* cuda = device_runtime(DeviceType::cuda);
  if (cuda == nullptr) {
    const BackendInfo* b = Registry::get().backend("cuda");
    t.add(
        {"cuda", "none: " + (b != nullptr && b->compiled
                                 ? b->why_not
                                 : std::string("the cuda backend is not built into this binary"))});
  } else if (cuda->device_count() == 0) {
    t.add({"cuda", "none: " + cuda->unavailable_reason()});
  } else {
    for (int i = 0; i < cuda->device_count(); ++i)
      t.add({Device::cuda(i).str(), cuda->describe(i)});
  }
  t.print(os);
}

struct InfoCli {
  bool kernels = false, tuning = false;
};

int run_info(const InfoCli& cli) {
  // Registry::get() installs the device runtimes, so it comes first.
  const Registry& reg = Registry::get();
  std::ostream& os = std::cout;
  os << "strata " << kVersion << "\n";
  os << "build: " << kBuildOptions << "\n\n";
  print_backends(os, reg);
  os << '\n';
  if (cli.kernels) {
    print_kernels(os, reg);
  } else {
    print_op_count(os, reg);
  }
  os << '\n';
  print_devices(os);
  if (cli.tuning) {
    os << '\n';
    print_tuning(os);
  }
  return kExitOk;
}

}  // namespace

void add_info_command(CLI::App& root, int& status) {
  auto cli = std::make_shared<InfoCli>();
  CLI::App* cmd = root.add_subcommand(
      "info", "Print the version, build options, backends, op count and devices");
  cmd->add_flag("--kernels", cli->kernels,
                "also list every kernel: op, backend, dtypes and kernel name");
  cmd->add_flag("--tuning", cli->tuning,
                "also list the tuning switches (STRATA_* environment variables): name, the "
                "value this process runs with, what it does");
  cmd->callback([cli, &status] { status = run_info(*cli); });
}

}  // namespace strata::cli
