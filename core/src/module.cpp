// Finds and opens shared modules (strata/detail/module.hpp).
#include "strata/detail/module.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

namespace strata::detail {
namespace {
std::mutex g_mutex;
std::vector<std::string>& opened() {
  static std::vector<std::string> paths;
  return paths;
}
}  // namespace

std::string core_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&core_library_dir), &info) == 0 || info.dli_fname == nullptr)
    return ".";
  const std::string self = info.dli_fname;
  const auto slash = self.rfind('/');
  return slash == std::string::npos ? "." : self.substr(0, slash);
}

void* load_module_entry(const std::string& file, const char* entry, std::string* why) {
  const std::string full = core_library_dir() + "/" + file;
  std::lock_guard<std::mutex> lock(g_mutex);
  // RTLD_NOW: a missing symbol is reported here, not at some later call;
  // RTLD_LOCAL: the module's own symbols stay out of the global scope.
  dlerror();
  void* handle = dlopen(full.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    const std::string text = err != nullptr ? err : "unknown error";
    // dlerror's text usually names the path itself; add it when it does not.
    *why = text.find(full) != std::string::npos ? text : full + ": " + text;
    return nullptr;
  }
  void* sym = dlsym(handle, entry);
  if (sym == nullptr) {
    const char* err = dlerror();
    *why = full + " has no entry point " + entry + ": " + (err != nullptr ? err : "");
    return nullptr;
  }
  auto& paths = opened();
  if (std::find(paths.begin(), paths.end(), full) == paths.end()) paths.push_back(full);
  return sym;
}

std::vector<std::string> loaded_modules() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return opened();
}

}  // namespace strata::detail
