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
//
// A backend may be deferred (add_deferred_backend): it is listed, with a
// stable BackendId, from the start, but its kernels are registered only the
// first time something asks for it (the cuda module, loaded on first use).
// That second phase builds a new table and publishes it atomically; earlier
// tables are kept until the registry is destroyed, so a reader that holds
// one never sees it freed, and ids never change.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
  // A backend whose kernels come later: `load` runs once, the first time the
  // backend is asked for (resolve_backend, backend(), backends(), kernels(),
  // ops(), find(), an op unknown to op_id(), or device_runtime() for its
  // device kind), and registers it as a filler would: add_backend() under
  // the same name replaces `info`, then add_kernel(). Until then the backend
  // reports `info`. A load that throws leaves the backend unavailable with
  // the exception's text as its reason.
  void add_deferred_backend(BackendInfo info, Filler load);
  // `supports` returns nullptr when the kernel can run `args`, else the
  // reason, a string with static storage: choosing a kernel builds no
  // string. Several kernels may share (op, backend, dtype): the first whose
  // supports() accepts the call serves it.
  template <class Args>
  void add_kernel(std::string_view op, std::string_view backend, DType dt, std::string name,
                  void (*run)(const Args&), const char* (*supports)(const Args&) = nullptr);

  // ---- queries ------------------------------------------------------------
  // Listing queries load every deferred backend first.
  const std::vector<BackendInfo>& backends() const { return loaded(-1).backends; }
  const BackendInfo* backend(std::string_view name) const;  // nullptr if unknown
  const BackendInfo& backend(BackendId id) const { return loaded(id).backends[id]; }
  // Every kernel of `op` (all ops when empty), in registration order.
  std::vector<KernelInfo> kernels(std::string_view op = {}) const;
  // Names of every op that has at least one kernel, sorted.
  std::vector<std::string> ops() const;

  // Loads the deferred backends that run on `t` (device_runtime() asks this
  // before it reports that a device kind has no runtime).
  void load_deferred(DeviceType t) const;
  // True while `name` is deferred and not loaded yet (tests; strata info).
  bool deferred(std::string_view name) const;

  // Id of a registered op; throws strata::Error if no backend registered it.
  OpId op_id(std::string_view op) const;
  const std::string& op_name(OpId id) const { return table().op_names[id]; }

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
    const Table& t = loaded(backend);
    return t.span(op, backend, dt).count > 0;
  }

  template <class Args>
  struct Found {
    void (*run)(const Args&);
    const KernelInfo* info;
  };
  template <class Args>
  Found<Args> find(OpId op, BackendId backend, DType dt, const Args& args) const;

  Registry();
  ~Registry();
  Registry(Registry&& other) noexcept;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  Registry& operator=(Registry&&) = delete;

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
    std::int32_t first = 0, count = 0;  // into sorted
  };
  // Everything a query reads. Built during registration, then published and
  // never changed: a deferred load copies it, adds to the copy and publishes
  // that.
  struct Table {
    std::vector<BackendInfo> backends;
    std::vector<Filler> loaders;  // per backend: set while it is deferred
    std::vector<std::string> op_names;
    std::vector<Entry> entries;        // registration order
    std::vector<const Entry*> sorted;  // grouped by (op, backend, dtype), registration order kept
    std::vector<Span> spans;           // [op][backend][dtype]
    // The backend "auto" names for each device type, chosen by finalize()
    // (-1: none serves that device).
    BackendId auto_backend[2] = {-1, -1};
    bool any_deferred = false;

    const Span& span(OpId op, BackendId b, DType dt) const {
      return spans[(static_cast<std::size_t>(op) * backends.size() + b) * kNumDTypes +
                   static_cast<int>(dt)];
    }
    BackendId find_backend(std::string_view name) const;  // -1 if unknown
  };

  const Table& table() const { return *published_.load(std::memory_order_acquire); }
  // The table with backend `id` loaded (every deferred backend when id < 0).
  const Table& loaded(BackendId id) const {
    const Table& t = table();
    const bool pending = id < 0 ? t.any_deferred : t.loaders[id] != nullptr;
    return pending ? load(id) : t;
  }
  const Table& load(BackendId id) const;
  Table& building(const char* call);
  void add_entry(std::string_view op, std::string_view backend, Entry e);
  [[noreturn]] void fail_args_type(const Entry& e) const;
  [[noreturn]] void fail_unsupported(const Table& t, OpId op, BackendId b, DType dt,
                                     const std::string& reasons) const;

  std::unique_ptr<Table> building_;  // during registration; null once finalized
  BackendId replacing_ = -1;         // the deferred backend a load registers
  mutable std::atomic<const Table*> published_;
  // Every table ever published, newest last, freed with the registry.
  mutable std::vector<std::unique_ptr<const Table>> tables_;
  mutable std::mutex load_mutex_;
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
  const Table& t = loaded(b);
  const Span& s = t.span(op, b, dt);
  for (std::int32_t i = 0; i < s.count; ++i) {
    const Entry* e = t.sorted[s.first + i];
    if (e->args_type != std::type_index(typeid(Args))) fail_args_type(*e);
    auto sup = reinterpret_cast<const char* (*)(const Args&)>(e->supports);
    if (sup == nullptr || sup(args) == nullptr)
      return {reinterpret_cast<void (*)(const Args&)>(e->run), &e->info};
  }
  // Failure path only: collect every candidate's reason.
  std::string reasons;
  for (std::int32_t i = 0; i < s.count; ++i) {
    const Entry* e = t.sorted[s.first + i];
    auto sup = reinterpret_cast<const char* (*)(const Args&)>(e->supports);
    reasons += (reasons.empty() ? "" : "; ") + e->info.name + ": " + sup(args);
  }
  fail_unsupported(t, op, b, dt, reasons);
}

}  // namespace strata
