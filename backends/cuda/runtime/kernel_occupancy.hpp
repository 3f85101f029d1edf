#pragma once
// Per (kernel, device), once: the kernel's dynamic shared-memory limit raised
// to what it asks for, and how many of its blocks one SM holds. The launchers
// ask on every call, so the answer is cached without a lock: after the first
// call a lookup reads a few atomics (no mutex per launch). Plain C++ (the
// kernel is passed as its host-side address).
#include <cstddef>

namespace strata::cuda {

// Blocks of `kernel` (launched with `threads` threads and `smem` bytes of
// dynamic shared memory) resident on one SM of device `dev`, after raising
// its dynamic shared-memory limit to `smem` there. 0 when the occupancy
// calculator finds none or fails (the caller decides what that means); a
// failure to raise the limit is a strata::Error.
int resident_blocks(const void* kernel, int threads, std::size_t smem, int dev);

}  // namespace strata::cuda
