#pragma once
// Memory a cpu kernel allocates for itself (packed copies, staging outputs,
// per-thread scratch). It is allocated before any OpenMP region, since an
// exception cannot leave one (it would terminate the process), and it never
// surfaces as std::bad_alloc: a size that overflows, one larger than the
// memory available, or an allocation that fails anyway is a strata::Error
// naming the op, what the memory is for and the bytes.
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <vector>

#include "strata/error.hpp"
#include "strata/host_memory.hpp"

namespace strata::cpu {

// Below this, asking the system how much memory is left (a /proc read per
// call) costs more than the check can save.
inline constexpr std::uint64_t kWorkspaceCheckBytes = std::uint64_t{64} << 20;

template <class... Why>
[[noreturn]] void refuse_workspace(const char* op, const char* what, std::uint64_t bytes,
                                   Why&&... why) {
  fail(op, "the cpu backend needs ", bytes, " bytes (", bytes >> 20, " MiB) for ", what, ", but ",
       why...);
}

// Refuses `bytes` for `what` when the system does not have them available
// (asked only for large amounts).
inline void check_workspace(std::uint64_t bytes, const char* op, const char* what) {
  if (bytes < kWorkspaceCheckBytes) return;
  const std::uint64_t avail = available_host_memory_bytes();
  if (bytes > avail)
    refuse_workspace(op, what, bytes, "only ", avail, " bytes (", avail >> 20,
                     " MiB) are available");
}

// The product of `dims` value-initialised elements of T for `what` ("a
// packed copy of an input"), or a strata::Error "<op>: the cpu backend
// needs N bytes ...".
template <class T>
std::vector<T> workspace(std::initializer_list<std::int64_t> dims, const char* op,
                         const char* what) {
  std::uint64_t count = 1, bytes = 0;
  bool overflow = false;
  for (const std::int64_t d : dims)
    overflow |= d < 0 || __builtin_mul_overflow(count, static_cast<std::uint64_t>(d), &count);
  if (overflow || __builtin_mul_overflow(count, sizeof(T), &bytes))
    fail(op, "the cpu backend's ", what, " would need more than 2^64 bytes");
  check_workspace(bytes, op, what);
  try {
    return std::vector<T>(static_cast<std::size_t>(count));
  } catch (const std::bad_alloc&) {
    refuse_workspace(op, what, bytes, "the allocation failed");
  } catch (const std::length_error&) {
    refuse_workspace(op, what, bytes, "that is more than one allocation can hold");
  }
}

// Rethrows the first exception an OpenMP region caught (and kept for after
// the region); std::bad_alloc comes out as a strata::Error naming `op`.
[[noreturn]] inline void rethrow_after_region(const std::exception_ptr& first, const char* op) {
  try {
    std::rethrow_exception(first);
  } catch (const std::bad_alloc&) {
    fail(op, "the cpu backend ran out of memory inside a parallel loop");
  }
}

}  // namespace strata::cpu
