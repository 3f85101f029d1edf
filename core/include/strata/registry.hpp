#pragma once
// The op registry: (op, backend, dtype) -> kernels, each with a supports()
// predicate so that a backend may serve part of an op. Filled once, on first
// use, by the filler that the backends list installs (Registry::set_filler;
// backends/register_backends.cpp, outside core), then only read, so any
// number of threads may dispatch at once. Core itself knows no backend: a
// program that links core alone gets an empty registry.
//
// A call resolves its backend once (resolve_backend: "auto", unknown, not
// built, unavailable, wrong device) and then finds its kernel by integer ids
// in a flat table: no string compares and no allocation per call. Front ends
// keep their OpId in a function-local static (op_id() is a lookup by name).
#include <cstdint>
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

using OpId = int;
using BackendId = int;

class Registry {
 public:
  // The filled registry (fills it on first call, thread-safe).
  static const Registry& get();

  // The function that fills the registry on the first get(): the backends
  // list installs it while the program starts. A filler installed after the
  // first get() is ignored.
  using Filler = void (*)(Registry&);
  static void set_filler(Filler fill);

  // ---- registration (only from the filler) --------------------------------
  void add_backend(BackendInfo info);
  // `supports` returns nullptr when the kernel can run `args`, else the
  // reason, a string with static storage: choosing a kernel builds no
  // string. Several kernels may share (op, backend, dtype): the first whose
  // supports() accepts the call serves it.
  template <class Args>
  void add_kernel(std::string_view op, std::string_view backend, DType dt, std::string name,
                  void (*run)(const Args&), const char* (*supports)(const Args&) = nullptr);

  // ---- queries ------------------------------------------------------------
  const std::vector<BackendInfo>& backends() const { return backends_; }
  const BackendInfo* backend(std::string_view name) const;  // nullptr if unknown
  const BackendInfo& backend(BackendId id) const { return backends_[id]; }
  // Every kernel of `op` (all ops when empty), in registration order.
  std::vector<KernelInfo> kernels(std::string_view op = {}) const;
  // Names of every op that has at least one kernel, sorted.
  std::vector<std::string> ops() const;

  // Id of a registered op; throws strata::Error if no backend registered it.
  OpId op_id(std::string_view op) const;
  const std::string& op_name(OpId id) const { return op_names_[id]; }

  // The backend a call runs on: `name` is "auto" (the fast backend for
  // `dev`: cpu, falling back to reference, on the host; cuda on a GPU) or a
  // backend's name. Throws strata::Error naming `op` when the backend is
  // unknown, not built, unavailable, or runs on another device than `dev`.
  BackendId resolve_backend(const char* op, std::string_view name, Device dev) const;

  // The kernel for (op, backend, dt) whose supports() accepts `args`.
  // Throws strata::Error naming op, backend and dtype, with every
  // candidate's reason, when none does.
  // True when any kernel is registered for (op, backend, dt).
  bool has_kernel(OpId op, BackendId backend, DType dt) const {
    return span(op, backend, dt).count > 0;
  }

  template <class Args>
  struct Found {
    void (*run)(const Args&);
    const KernelInfo* info;
  };
  template <class Args>
  Found<Args> find(OpId op, BackendId backend, DType dt, const Args& args) const;

  Registry() = default;

  // Builds the lookup table; called once by get() after registration.
  void finalize();

 private:
  struct Entry {
    KernelInfo info;
    OpId op;
    BackendId backend;
    std::type_index args_type;
    void* run;       // really void(*)(const Args&)
    void* supports;  // really const char* (*)(const Args&), may be null
  };
  struct Span {
    std::int32_t first = 0, count = 0;  // into sorted_
  };
  void add_entry(std::string_view op, std::string_view backend, Entry e);
  const Span& span(OpId op, BackendId b, DType dt) const {
    return table_[(static_cast<std::size_t>(op) * backends_.size() + b) * kNumDTypes +
                  static_cast<int>(dt)];
  }
  [[noreturn]] void fail_args_type(const Entry& e) const;
  [[noreturn]] void fail_unsupported(OpId op, BackendId b, DType dt,
                                     const std::string& reasons) const;

  std::vector<BackendInfo> backends_;
  std::vector<std::string> op_names_;
  std::vector<Entry> entries_;        // registration order
  std::vector<const Entry*> sorted_;  // grouped by (op, backend, dtype), registration order kept
  std::vector<Span> table_;           // [op][backend][dtype]
  // The backend "auto" names for each device type, chosen once by finalize()
  // (-1: none serves that device).
  BackendId auto_backend_[2] = {-1, -1};
};

// ---- template definitions -------------------------------------------------
template <class Args>
void Registry::add_kernel(std::string_view op, std::string_view backend, DType dt, std::string name,
                          void (*run)(const Args&), const char* (*supports)(const Args&)) {
  add_entry(op, backend,
            Entry{KernelInfo{std::string(op), std::string(backend), dt, std::move(name)}, -1, -1,
                  std::type_index(typeid(Args)), reinterpret_cast<void*>(run),
                  reinterpret_cast<void*>(supports)});
}

template <class Args>
Registry::Found<Args> Registry::find(OpId op, BackendId b, DType dt, const Args& args) const {
  const Span& s = span(op, b, dt);
  for (std::int32_t i = 0; i < s.count; ++i) {
    const Entry* e = sorted_[s.first + i];
    if (e->args_type != std::type_index(typeid(Args))) fail_args_type(*e);
    auto sup = reinterpret_cast<const char* (*)(const Args&)>(e->supports);
    if (sup == nullptr || sup(args) == nullptr)
      return {reinterpret_cast<void (*)(const Args&)>(e->run), &e->info};
  }
  // Failure path only: collect every candidate's reason.
  std::string reasons;
  for (std::int32_t i = 0; i < s.count; ++i) {
    const Entry* e = sorted_[s.first + i];
    auto sup = reinterpret_cast<const char* (*)(const Args&)>(e->supports);
    reasons += (reasons.empty() ? "" : "; ") + e->info.name + ": " + sup(args);
  }
  fail_unsupported(op, b, dt, reasons);
}

}  // namespace strata
