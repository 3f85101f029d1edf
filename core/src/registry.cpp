#include "strata/registry.hpp"

#include <algorithm>
#include <mutex>

#include "strata/error.hpp"

namespace strata {

const Registry& Registry::get() {
  // A function-local static is initialised exactly once, thread-safely.
  // Registration must not call device_runtime() or Registry::get() (that
  // would re-enter this initialiser); install_device_runtime() is fine.
  static const Registry registry = [] {
    Registry r;
    register_backends(r);
    return r;
  }();
  return registry;
}

void Registry::add_backend(BackendInfo info) {
  STRATA_CHECK(backend(info.name) == nullptr, "Registry::add_backend", "backend '", info.name,
               "' registered twice");
  backends_.push_back(std::move(info));
}

const BackendInfo* Registry::backend(std::string_view name) const {
  for (const BackendInfo& b : backends_)
    if (b.name == name) return &b;
  return nullptr;
}

void Registry::add_entry(Entry e) {
  STRATA_CHECK(backend(e.info.backend) != nullptr, "Registry::add_kernel", "kernel '", e.info.name,
               "' names unknown backend '", e.info.backend, "'");
  entries_.push_back(std::move(e));
}

std::vector<KernelInfo> Registry::kernels(std::string_view op) const {
  std::vector<KernelInfo> out;
  for (const Entry& e : entries_)
    if (op.empty() || e.info.op == op) out.push_back(e.info);
  return out;
}

std::vector<const Registry::Entry*> Registry::candidates(std::string_view op,
                                                         std::string_view backend_name, DType dt,
                                                         std::type_index args_type) const {
  const std::string opname(op);
  const BackendInfo* b = backend(backend_name);
  if (b == nullptr) {
    std::string known;
    for (const BackendInfo& x : backends_) known += (known.empty() ? "" : ", ") + x.name;
    fail(opname.c_str(), "unknown backend '", backend_name, "' (known: ", known, ")");
  }
  if (!b->compiled) fail(opname.c_str(), "backend '", backend_name, "' is not built: ", b->why_not);
  if (!b->available)
    fail(opname.c_str(), "backend '", backend_name, "' is unavailable: ", b->why_not);
  std::vector<const Entry*> out;
  for (const Entry& e : entries_) {
    if (e.info.op == op && e.info.backend == backend_name && e.info.dtype == dt) {
      STRATA_CHECK(e.args_type == args_type, opname.c_str(), "kernel '", e.info.name,
                   "' was registered with a different argument type");
      out.push_back(&e);
    }
  }
  return out;
}

void Registry::fail_unsupported(std::string_view op, std::string_view backend_name, DType dt,
                                const std::string& reasons) const {
  const std::string opname(op);
  if (reasons.empty())
    fail(opname.c_str(), "backend '", backend_name, "' has no kernel for dtype ", dtype_name(dt));
  fail(opname.c_str(), "backend '", backend_name, "' cannot serve this call (", reasons, ")");
}

}  // namespace strata
