#pragma once
// Large host blocks kept for reuse after their Storage is freed (storage.cpp).
//
// Why: glibc hands a large block back to the kernel when it is freed (an
// mmap'd chunk, or the heap's top trimmed), and the next allocation of the
// same size faults every page in again, zeroed by the kernel. A training step
// allocates the same activations and gradients every step, so on a VM the
// page faults cost more than the products they feed (docs/log/autograd.md,
// "matmul's backward on the cpu"). Small blocks are left to malloc, whose
// own free lists already serve them without a system call.
//
// Policy: blocks of at least kMinBytes are kept by their exact size (a step
// asks for the same sizes again, and no rounding wastes memory) up to a bound
// on the bytes held; a block that would pass the bound is freed at once. An
// allocation that fails frees everything held and tries once more. Off under
// AddressSanitizer (a reused block would hide a use after free) and with
// STRATA_HOST_CACHE=0 (strata/tuning.hpp).
#include <cstddef>
#include <cstdint>

namespace strata::detail {

inline constexpr std::size_t kHostCacheMinBytes = std::size_t(256) << 10;

struct HostCacheStats {
  std::uint64_t hits = 0, misses = 0;
  std::size_t cached_blocks = 0, cached_bytes = 0, max_cached_bytes = 0;
};

// A 64-byte aligned block of nbytes (> 0): a kept one of that exact size, or
// a new one. Throws std::bad_alloc when the system has none.
void* host_allocate(std::size_t nbytes);
// Takes back a block from host_allocate with its size: kept or freed.
void host_release(void* p, std::size_t nbytes) noexcept;
// Frees every kept block; returns the bytes freed.
std::size_t host_cache_trim() noexcept;
HostCacheStats host_cache_stats();

}  // namespace strata::detail
