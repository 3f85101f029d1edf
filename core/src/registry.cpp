#include "strata/registry.hpp"

#include <algorithm>
#include <atomic>

#include "strata/error.hpp"

namespace strata {

namespace {
std::atomic<Registry::Filler> g_filler{nullptr};

// Set while this thread runs a deferred backend's loader: a loader that asks
// the registry something sees the table as it is instead of waiting for
// itself.
thread_local bool t_loading = false;
}  // namespace

void Registry::set_filler(Filler fill) { g_filler.store(fill, std::memory_order_release); }

const Registry& Registry::get() {
  // A function-local static is initialised exactly once, thread-safely.
  // Registration must not call device_runtime() or Registry::get() (that
  // would re-enter this initialiser); install_device_runtime() is fine.
  struct Filled {
    Registry r;
    Filled() {
      if (Filler fill = g_filler.load(std::memory_order_acquire)) fill(r);
      r.finalize();
    }
  };
  static const Filled filled;
  return filled.r;
}

Registry::Registry() : building_(std::make_unique<Table>()) {
  // Queries before finalize() see an empty table.
  tables_.push_back(std::make_unique<Table>());
  published_.store(tables_.back().get(), std::memory_order_release);
}

Registry::~Registry() = default;

Registry::Registry(Registry&& other) noexcept
    : building_(std::move(other.building_)),
      replacing_(other.replacing_),
      published_(other.published_.load(std::memory_order_acquire)),
      tables_(std::move(other.tables_)) {}

Registry::Table& Registry::building(const char* call) {
  STRATA_CHECK(building_ != nullptr, call, "registry already finalized");
  return *building_;
}

BackendId Registry::Table::find_backend(std::string_view name) const {
  for (std::size_t i = 0; i < backends.size(); ++i)
    if (backends[i].name == name) return static_cast<BackendId>(i);
  return -1;
}

void Registry::add_backend(BackendInfo info) {
  Table& t = building("Registry::add_backend");
  const BackendId id = t.find_backend(info.name);
  if (id >= 0 && id == replacing_) {  // a deferred backend's load names itself
    t.backends[id] = std::move(info);
    return;
  }
  STRATA_CHECK(id < 0, "Registry::add_backend", "backend '", info.name, "' registered twice");
  t.backends.push_back(std::move(info));
  t.loaders.push_back(nullptr);
}

void Registry::add_deferred_backend(BackendInfo info, Filler load) {
  STRATA_CHECK(load != nullptr, "Registry::add_deferred_backend", "backend '", info.name,
               "' has no loader");
  add_backend(std::move(info));
  building_->loaders.back() = load;
}

void Registry::add_entry(std::string_view op, std::string_view backend_name, Entry e) {
  Table& t = building("Registry::add_kernel");
  e.backend = t.find_backend(backend_name);
  STRATA_CHECK(e.backend >= 0, "Registry::add_kernel", "kernel '", e.info.name,
               "' names unknown backend '", backend_name, "'");
  auto it = std::find(t.op_names.begin(), t.op_names.end(), op);
  if (it == t.op_names.end()) {
    t.op_names.emplace_back(op);
    it = t.op_names.end() - 1;
  }
  e.op = static_cast<OpId>(it - t.op_names.begin());
  for (const Entry& other : t.entries) {
    STRATA_CHECK(other.op != e.op || other.args_type == e.args_type, "Registry::add_kernel",
                 "kernel '", e.info.name, "' takes another argument type than '", other.info.name,
                 "' of the same op");
  }
  t.entries.push_back(std::move(e));
}

void Registry::finalize() {
  Table& t = building("Registry::finalize");
  // "auto": the fast backend for the tensors' device; on the host the
  // reference when no cpu backend is available.
  const BackendId cpu = t.find_backend("cpu");
  t.auto_backend[static_cast<int>(DeviceType::cpu)] =
      cpu >= 0 && t.backends[cpu].compiled && t.backends[cpu].available
          ? cpu
          : t.find_backend("reference");
  t.auto_backend[static_cast<int>(DeviceType::cuda)] =
      t.find_backend(device_type_name(DeviceType::cuda));
  t.any_deferred =
      std::any_of(t.loaders.begin(), t.loaders.end(), [](Filler f) { return f != nullptr; });
  t.sorted.clear();
  for (const Entry& e : t.entries) t.sorted.push_back(&e);
  auto key = [&](const Entry* e) {
    return (static_cast<std::size_t>(e->op) * t.backends.size() + e->backend) * kNumDTypes +
           static_cast<int>(e->info.dtype);
  };
  std::stable_sort(t.sorted.begin(), t.sorted.end(),
                   [&](const Entry* a, const Entry* b) { return key(a) < key(b); });
  t.spans.assign(t.op_names.size() * t.backends.size() * kNumDTypes, Span{});
  for (std::size_t i = 0; i < t.sorted.size(); ++i) {
    Span& s = t.spans[key(t.sorted[i])];
    if (s.count == 0) s.first = static_cast<std::int32_t>(i);
    ++s.count;
  }
  tables_.push_back(std::move(building_));
  published_.store(tables_.back().get(), std::memory_order_release);
}

const Registry::Table& Registry::load(BackendId id) const {
  if (t_loading) return table();
  std::lock_guard<std::mutex> lock(load_mutex_);
  t_loading = true;
  struct Reset {
    ~Reset() { t_loading = false; }
  } reset;
  const Table* cur = &table();
  for (std::size_t b = 0; b < cur->loaders.size(); ++b) {
    const Filler fill = cur->loaders[b];
    if (fill == nullptr || (id >= 0 && static_cast<BackendId>(b) != id)) continue;
    // The next table starts as a copy of the current one with this backend
    // no longer deferred; the loader adds to it as a filler would.
    auto start = [&] {
      auto copy = std::make_unique<Table>(*cur);
      copy->loaders[b] = nullptr;
      return copy;
    };
    Registry next;
    next.building_ = start();
    next.replacing_ = static_cast<BackendId>(b);
    try {
      fill(next);
    } catch (const std::exception& e) {
      next.building_ = start();
      BackendInfo& info = next.building_->backends[b];
      info.available = false;
      info.why_not = std::string("loading the backend failed: ") + e.what();
    }
    next.finalize();
    tables_.push_back(std::move(next.tables_.back()));
    cur = tables_.back().get();
    published_.store(cur, std::memory_order_release);
  }
  return *cur;
}

void Registry::load_deferred(DeviceType t) const {
  const Table& cur = table();
  for (std::size_t b = 0; b < cur.loaders.size(); ++b)
    if (cur.loaders[b] != nullptr && cur.backends[b].device == t) load(static_cast<BackendId>(b));
}

bool Registry::deferred(std::string_view name) const {
  const Table& t = table();
  const BackendId id = t.find_backend(name);
  return id >= 0 && t.loaders[id] != nullptr;
}

const BackendInfo* Registry::backend(std::string_view name) const {
  const BackendId id = table().find_backend(name);
  return id >= 0 ? &loaded(id).backends[id] : nullptr;
}

std::vector<KernelInfo> Registry::kernels(std::string_view op) const {
  std::vector<KernelInfo> out;
  for (const Entry& e : loaded(-1).entries)
    if (op.empty() || e.info.op == op) out.push_back(e.info);
  return out;
}

std::vector<std::string> Registry::ops() const {
  std::vector<std::string> out = loaded(-1).op_names;
  std::sort(out.begin(), out.end());
  return out;
}

OpId Registry::op_id(std::string_view op) const {
  // An op only a deferred backend registers is found once that is loaded.
  auto find = [&](const Table& t) {
    const auto it = std::find(t.op_names.begin(), t.op_names.end(), op);
    return it == t.op_names.end() ? OpId(-1) : static_cast<OpId>(it - t.op_names.begin());
  };
  OpId id = find(table());
  if (id < 0 && table().any_deferred) id = find(loaded(-1));
  if (id >= 0) return id;
  fail(std::string(op).c_str(), "no backend registers a kernel for this op");
}

BackendId Registry::resolve_backend(const char* op, std::string_view name, Device dev) const {
  const Table& t = table();
  BackendId id = -1;
  if (name == "auto") {
    id = t.auto_backend[static_cast<int>(dev.type)];
    STRATA_CHECK(id >= 0, op, "no backend serves ", dev.str(), " tensors");
  } else {
    id = t.find_backend(name);
    if (id < 0) {
      std::string known;
      for (const BackendInfo& x : t.backends) known += ", " + x.name;
      fail(op, "unknown backend '", name, "' (known: auto", known, ")");
    }
  }
  const BackendInfo& b = loaded(id).backends[id];
  STRATA_CHECK(b.compiled, op, "backend '", b.name,
               "' is not built into this library: ", b.why_not);
  STRATA_CHECK(b.available, op, "backend '", b.name, "' is not available: ", b.why_not);
  STRATA_CHECK(b.device == dev.type, op, "backend '", b.name, "' runs on ",
               device_type_name(b.device), " tensors but the inputs are on ", dev.str());
  return id;
}

void Registry::fail_args_type(const Entry& e) const {
  fail(e.info.op.c_str(), "kernel '", e.info.name,
       "' was registered with a different argument type");
}

void Registry::fail_unsupported(const Table& t, OpId op, BackendId b, DType dt,
                                const std::string& reasons) const {
  const std::string& opname = t.op_names[op];
  if (reasons.empty()) {
    fail(opname.c_str(), "backend '", t.backends[b].name, "' has no kernel for dtype ",
         dtype_name(dt));
  }
  fail(opname.c_str(), "backend '", t.backends[b].name, "' cannot serve this call (", reasons, ")");
}

}  // namespace strata
