#include "strata/registry.hpp"

#include <algorithm>
#include <atomic>

#include "strata/error.hpp"

namespace strata {

namespace {
std::atomic<Registry::Filler> g_filler{nullptr};
}  // namespace

void Registry::set_filler(Filler fill) { g_filler.store(fill, std::memory_order_release); }

const Registry& Registry::get() {
  // A function-local static is initialised exactly once, thread-safely.
  // Registration must not call device_runtime() or Registry::get() (that
  // would re-enter this initialiser); install_device_runtime() is fine.
  static const Registry registry = [] {
    Registry r;
    if (Filler fill = g_filler.load(std::memory_order_acquire)) fill(r);
    r.finalize();
    return r;
  }();
  return registry;
}

void Registry::add_backend(BackendInfo info) {
  STRATA_CHECK(backend(info.name) == nullptr, "Registry::add_backend", "backend '", info.name,
               "' registered twice");
  STRATA_CHECK(table_.empty(), "Registry::add_backend", "registry already finalized");
  backends_.push_back(std::move(info));
}

const BackendInfo* Registry::backend(std::string_view name) const {
  for (const BackendInfo& b : backends_)
    if (b.name == name) return &b;
  return nullptr;
}

void Registry::add_entry(std::string_view op, std::string_view backend_name, Entry e) {
  STRATA_CHECK(table_.empty(), "Registry::add_kernel", "registry already finalized");
  const BackendInfo* b = backend(backend_name);
  STRATA_CHECK(b != nullptr, "Registry::add_kernel", "kernel '", e.info.name,
               "' names unknown backend '", backend_name, "'");
  e.backend = static_cast<BackendId>(b - backends_.data());
  auto it = std::find(op_names_.begin(), op_names_.end(), op);
  if (it == op_names_.end()) {
    op_names_.emplace_back(op);
    it = op_names_.end() - 1;
  }
  e.op = static_cast<OpId>(it - op_names_.begin());
  for (const Entry& other : entries_) {
    STRATA_CHECK(other.op != e.op || other.args_type == e.args_type, "Registry::add_kernel",
                 "kernel '", e.info.name, "' takes another argument type than '", other.info.name,
                 "' of the same op");
  }
  entries_.push_back(std::move(e));
}

void Registry::finalize() {
  // "auto": the fast backend for the tensors' device; on the host the
  // reference when no cpu backend is available.
  auto id_of = [&](const BackendInfo* b) {
    return b != nullptr ? static_cast<BackendId>(b - backends_.data()) : BackendId(-1);
  };
  const BackendInfo* cpu = backend("cpu");
  auto_backend_[static_cast<int>(DeviceType::cpu)] =
      id_of(cpu && cpu->compiled && cpu->available ? cpu : backend("reference"));
  auto_backend_[static_cast<int>(DeviceType::cuda)] =
      id_of(backend(device_type_name(DeviceType::cuda)));
  sorted_.clear();
  for (const Entry& e : entries_) sorted_.push_back(&e);
  auto key = [&](const Entry* e) {
    return (static_cast<std::size_t>(e->op) * backends_.size() + e->backend) * kNumDTypes +
           static_cast<int>(e->info.dtype);
  };
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [&](const Entry* a, const Entry* b) { return key(a) < key(b); });
  table_.assign(op_names_.size() * backends_.size() * kNumDTypes, Span{});
  for (std::size_t i = 0; i < sorted_.size(); ++i) {
    Span& s = table_[key(sorted_[i])];
    if (s.count == 0) s.first = static_cast<std::int32_t>(i);
    ++s.count;
  }
}

std::vector<KernelInfo> Registry::kernels(std::string_view op) const {
  std::vector<KernelInfo> out;
  for (const Entry& e : entries_)
    if (op.empty() || e.info.op == op) out.push_back(e.info);
  return out;
}

std::vector<std::string> Registry::ops() const {
  std::vector<std::string> out = op_names_;
  std::sort(out.begin(), out.end());
  return out;
}

OpId Registry::op_id(std::string_view op) const {
  for (std::size_t i = 0; i < op_names_.size(); ++i)
    if (op_names_[i] == op) return static_cast<OpId>(i);
  fail(std::string(op).c_str(), "no backend registers a kernel for this op");
}

BackendId Registry::resolve_backend(const char* op, std::string_view name, Device dev) const {
  const BackendInfo* b = nullptr;
  if (name == "auto") {
    const BackendId id = auto_backend_[static_cast<int>(dev.type)];
    STRATA_CHECK(id >= 0, op, "no backend serves ", dev.str(), " tensors");
    b = &backends_[id];
  } else {
    b = backend(name);
    if (b == nullptr) {
      std::string known;
      for (const BackendInfo& x : backends_) known += ", " + x.name;
      fail(op, "unknown backend '", name, "' (known: auto", known, ")");
    }
  }
  STRATA_CHECK(b->compiled, op, "backend '", b->name,
               "' is not built into this library: ", b->why_not);
  STRATA_CHECK(b->available, op, "backend '", b->name, "' is not available: ", b->why_not);
  STRATA_CHECK(b->device == dev.type, op, "backend '", b->name, "' runs on ",
               device_type_name(b->device), " tensors but the inputs are on ", dev.str());
  return static_cast<BackendId>(b - backends_.data());
}

void Registry::fail_args_type(const Entry& e) const {
  fail(e.info.op.c_str(), "kernel '", e.info.name,
       "' was registered with a different argument type");
}

void Registry::fail_unsupported(OpId op, BackendId b, DType dt, const std::string& reasons) const {
  const std::string& opname = op_names_[op];
  if (reasons.empty()) {
    fail(opname.c_str(), "backend '", backends_[b].name, "' has no kernel for dtype ",
         dtype_name(dt));
  }
  fail(opname.c_str(), "backend '", backends_[b].name, "' cannot serve this call (", reasons, ")");
}

}  // namespace strata
