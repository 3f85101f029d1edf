#pragma once
// Shared modules loaded on first use (the cuda backend's libstrata_cuda.so).
// Core knows no backend: it only finds a module, opens it once and returns
// the entry point the caller names. A module is looked up beside the shared
// library that holds core (libstrata_core.so, in the build tree and in the
// installed package alike): the package carries it in its library folder.
#include <string>
#include <vector>

namespace strata::detail {

// Opens `file` (a file name, looked up beside core's library) and returns
// its symbol `entry`. On failure returns nullptr
// and sets `why` to the path tried and the dynamic loader's message. Opening
// a module twice returns the same handle's symbol.
void* load_module_entry(const std::string& file, const char* entry, std::string* why);

// The paths of the modules opened so far through load_module_entry.
std::vector<std::string> loaded_modules();

// The directory of the file that holds core (libstrata_core.so, or the
// program when core is linked statically).
std::string core_library_dir();

}  // namespace strata::detail
