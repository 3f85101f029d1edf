#pragma once
// The cuda backend of a CUDA build, as the main library sees it: declared in
// the registry while it fills and loaded from its module (libstrata_cuda.so)
// on first use. See docs/guide/architecture.md, "The cuda module".
#include "strata/registry.hpp"

namespace strata {

// The module's file name, and its entry point (entry.cpp), which registers
// the backend as backends/cuda/register.cpp does in a static build.
inline constexpr const char* kCudaModuleFile = "libstrata_cuda.so";
inline constexpr const char* kCudaModuleEntry = "strata_cuda_module_register";

// Declares the cuda backend as deferred (register_backends.cpp calls it).
void declare_cuda_module(Registry& r);

// A program that links the cuda backend itself (the CUDA tests and
// benchmarks, which reach into its internals) registers that copy instead
// of loading the module: one CUDA runtime and one set of caches per process.
// Call it before the registry loads the backend (linked.cpp does, while the
// program starts).
void use_linked_cuda_backend(Registry::Filler register_linked);

}  // namespace strata
