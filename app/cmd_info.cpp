// `strata info`: what this binary was built with and what it can run on.
#include <omp.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "strata/device_runtime.hpp"
#include "strata/registry.hpp"
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
}

// One row per (op, backend, kernel), its dtypes joined: every op's kernels
// per backend and dtype, in a table that still fits a terminal.
void print_kernels(std::ostream& os, const Registry& reg) {
  os << "kernels (op, backend, dtypes):\n";
  Table t({"op", "backend", "dtypes", "kernel"});
  for (const std::string& op : reg.ops()) {
    const auto kernels = reg.kernels(op);
    std::vector<bool> done(kernels.size(), false);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      if (done[i]) continue;
      std::string dtypes;
      for (std::size_t j = i; j < kernels.size(); ++j) {
        if (done[j] || kernels[j].backend != kernels[i].backend ||
            kernels[j].name != kernels[i].name)
          continue;
        done[j] = true;
        dtypes += (dtypes.empty() ? "" : " ") + std::string(dtype_name(kernels[j].dtype));
      }
      t.add({op, kernels[i].backend, dtypes, kernels[i].name});
    }
  }
  t.print(os);
}

void print_devices(std::ostream& os) {
  os << "devices:\n";
  Table t({"device", "description"});
  t.add({"cpu", std::to_string(std::thread::hardware_concurrency()) + " hardware threads, " +
                    std::to_string(omp_get_max_threads()) + " OpenMP threads"});
  const DeviceRuntime* cuda = device_runtime(DeviceType::cuda);
  if (cuda == nullptr) {
    t.add({"cuda", "none: the cuda backend is not built into this binary"});
  } else if (cuda->device_count() == 0) {
    t.add({"cuda", "none: " + cuda->unavailable_reason()});
  } else {
    for (int i = 0; i < cuda->device_count(); ++i)
      t.add({Device::cuda(i).str(), cuda->describe(i)});
  }
  t.print(os);
}

int run_info() {
  // Registry::get() installs the device runtimes, so it comes first.
  const Registry& reg = Registry::get();
  std::ostream& os = std::cout;
  os << "strata " << kVersion << "\n";
  os << "build: " << kBuildOptions << "\n\n";
  print_backends(os, reg);
  os << '\n';
  print_kernels(os, reg);
  os << '\n';
  print_devices(os);
  return kExitOk;
}

}  // namespace

void add_info_command(CLI::App& root, int& status) {
  CLI::App* cmd = root.add_subcommand(
      "info", "Print the version, build options, backends, kernels and devices");
  cmd->callback([&status] { status = run_info(); });
}

}  // namespace strata::cli
