#pragma once
// How much host memory the system can still give: checked before large
// allocations (the reference's score matrices, the CLI's built-in problem)
// so that they fail with a clear strata::Error instead of std::bad_alloc.
#include <cstdint>

namespace strata {

// MemAvailable from /proc/meminfo (free memory plus what the kernel can
// reclaim), else the free pages sysconf reports, else UINT64_MAX (unknown:
// let the allocation decide).
std::uint64_t available_host_memory_bytes();

}  // namespace strata
