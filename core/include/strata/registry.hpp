#pragma once
// The op registry: (op, backend, dtype) -> kernel + supports() predicate.
// Filled once, on first use, by register_backends() (backends/register_backends.cpp),
// then only read, so any number of threads may dispatch at once.
#include <functional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "strata/device.hpp"
#include "strata/dtype.hpp"

namespace strata {

struct BackendInfo {
  std::string name;         // "reference", "cpu", "cuda"
  DeviceType device;        // where its tensors must live
  bool compiled = false;    // built into this library
  bool available = false;   // usable now (device present, driver loaded)
  std::string why_not;      // reason when !compiled or !available
  std::string description;  // one line for `strata info`
};

struct KernelInfo {
  std::string op;
  std::string backend;
  DType dtype;
  std::string name;  // e.g. "cpu.attention.online_softmax"
};

class Registry {
 public:
  // The filled registry (fills it on first call, thread-safe).
  static const Registry& get();

  // ---- registration (only from register_backends) ------------------------
  void add_backend(BackendInfo info);
  // `supports` returns "" when the kernel can run `args`, else the reason.
  template <class Args>
  void add_kernel(std::string op, std::string backend, DType dt, std::string name,
                  void (*run)(const Args&), std::string (*supports)(const Args&) = nullptr);

  // ---- queries ------------------------------------------------------------
  const std::vector<BackendInfo>& backends() const { return backends_; }
  const BackendInfo* backend(std::string_view name) const;  // nullptr if unknown
  std::vector<KernelInfo> kernels(std::string_view op) const;

  // The kernel for (op, backend, dt) that supports `args`. Throws
  // strata::Error naming op, backend and dtype, with the reason, if none.
  template <class Args>
  const KernelInfo& find(std::string_view op, std::string_view backend, DType dt, const Args& args,
                         void (**run)(const Args&)) const;

  // Registration entry point for a fresh registry (used by get()).
  Registry() = default;

 private:
  struct Entry {
    KernelInfo info;
    std::type_index args_type;
    void* run;       // really void(*)(const Args&)
    void* supports;  // really std::string(*)(const Args&), may be null
  };
  void add_entry(Entry e);
  // Candidates for (op, backend, dt) in registration order; throws if the
  // backend is unknown, not compiled or unavailable.
  std::vector<const Entry*> candidates(std::string_view op, std::string_view backend, DType dt,
                                       std::type_index args_type) const;
  [[noreturn]] void fail_unsupported(std::string_view op, std::string_view backend, DType dt,
                                     const std::string& reasons) const;

  std::vector<BackendInfo> backends_;
  std::vector<Entry> entries_;
};

// Defined in backends/register_backends.cpp: the one place that lists
// every backend. Called exactly once by Registry::get().
void register_backends(Registry& r);

// ---- template definitions -------------------------------------------------
template <class Args>
void Registry::add_kernel(std::string op, std::string backend, DType dt, std::string name,
                          void (*run)(const Args&), std::string (*supports)(const Args&)) {
  add_entry(Entry{KernelInfo{std::move(op), std::move(backend), dt, std::move(name)},
                  std::type_index(typeid(Args)), reinterpret_cast<void*>(run),
                  reinterpret_cast<void*>(supports)});
}

template <class Args>
const KernelInfo& Registry::find(std::string_view op, std::string_view backend, DType dt,
                                 const Args& args, void (**run)(const Args&)) const {
  std::string reasons;
  for (const Entry* e : candidates(op, backend, dt, std::type_index(typeid(Args)))) {
    auto sup = reinterpret_cast<std::string (*)(const Args&)>(e->supports);
    std::string why = sup ? sup(args) : std::string();
    if (why.empty()) {
      *run = reinterpret_cast<void (*)(const Args&)>(e->run);
      return e->info;
    }
    reasons += (reasons.empty() ? "" : "; ") + e->info.name + ": " + why;
  }
  fail_unsupported(op, backend, dt, reasons);
}

}  // namespace strata
