// The cuda module loads on first use, never before (its own process, so that
// no other test has asked for cuda yet):
//   strata_module_check backend   a CPU op run maps no module; asking the
//                                 registry for cuda loads it (or says why not)
//   strata_module_check runtime   the same, with a CUDA device runtime request
//   strata_module_check missing   run without the module beside core: the
//                                 backend reports the path tried and why
// In a build without CUDA the backend is "not built" and nothing is loaded.
#include <cstdio>
#include <fstream>
#include <string>

#include "strata/detail/module.hpp"
#include "strata/device_runtime.hpp"
#include "strata/strata.hpp"

using namespace strata;

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++g_failures;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Whether the process has mapped the cuda module (what the loader did,
// seen independently of core's own bookkeeping).
bool module_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (contains(line, "libstrata_cuda")) return true;
  return false;
}

float cpu_add() {
  const Tensor a = Tensor::full({8}, 1.0), b = Tensor::full({8}, 2.0);
  return add(a, b).to_vector<float>()[3];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "backend";
  const Registry& reg = Registry::get();

  // A CPU-only program: ops, ids and "auto" on the host load nothing.
  check(cpu_add() == 3.0f, "a cpu add gives 1 + 2 = 3");
  const OpId add_id = reg.op_id("add");
  const BackendId cpu_id = reg.resolve_backend("check", "auto", Device::cpu());
  check(!module_mapped(), "a CPU-only op run maps no cuda module");
  check(detail::loaded_modules().empty(), "core has opened no module");
  check(reg.deferred("cuda") == kBuiltWithCuda, "cuda is deferred exactly in a CUDA build");

  // Asking for cuda.
  const BackendInfo* cuda = nullptr;
  if (mode == "runtime") {
    DeviceRuntime* rt = device_runtime(DeviceType::cuda);
    check((rt != nullptr) == kBuiltWithCuda, "a cuda runtime exists exactly in a CUDA build");
    cuda = reg.backend("cuda");
  } else {
    cuda = reg.backend("cuda");
  }
  if (cuda == nullptr) {
    check(false, "the registry lists a cuda backend");
    return 1;
  }
  std::printf("cuda: compiled %d, available %d, reason: %s\n", cuda->compiled, cuda->available,
              cuda->why_not.c_str());
  check(!reg.deferred("cuda"), "cuda is no longer deferred once asked for");
  check(cuda->available || !cuda->why_not.empty(), "an unavailable cuda backend says why");
  check(!contains(cuda->why_not, "not loaded yet"), "the reason is the loaded backend's own");
  if (!kBuiltWithCuda) {
    check(!cuda->compiled && contains(cuda->why_not, "not built"), "without CUDA: not built");
    check(!module_mapped(), "without CUDA no module is mapped");
  } else if (mode == "missing") {
    check(contains(cuda->why_not, "did not load") && contains(cuda->why_not, "libstrata_cuda.so"),
          "a missing module is reported with the path tried");
    check(!module_mapped() && detail::loaded_modules().empty(), "no module is mapped");
  } else {
    check(module_mapped(), "asking for cuda maps the module");
    check(detail::loaded_modules().size() == 1, "core has opened one module");
    check(device_runtime(DeviceType::cuda) != nullptr, "the module installed the cuda runtime");
    bool cuda_add = false;
    for (const KernelInfo& k : reg.kernels("add")) cuda_add = cuda_add || k.backend == "cuda";
    check(cuda_add, "the module registered its kernels");
  }
  // Ids taken before the load still hold, and the host path still runs.
  check(reg.op_id("add") == add_id, "op ids are stable across the load");
  check(reg.resolve_backend("check", "auto", Device::cpu()) == cpu_id, "backend ids are stable");
  check(cpu_add() == 3.0f, "a cpu add still runs after the load");
  std::printf("%d failure(s)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
