#pragma once
// Runs a call under a lowered address-space limit (RLIMIT_AS), for the tests
// of allocations that fail: the limit is what the process maps now plus some
// headroom, so one large allocation fails where the memory checks (which read
// what the system has) let it through, while small ones still succeed.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "catch.hpp"

// The sanitizers reserve terabytes of address space: the limit cannot be
// lowered meaningfully under them, and tests that need it are skipped.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRATA_TEST_NO_RLIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define STRATA_TEST_NO_RLIMIT 1
#endif
#endif

namespace strata::test {

// f() with RLIMIT_AS set headroom_mib MiB above the pages the process maps
// now; the old limit is back when this returns or throws.
template <class F>
auto with_address_limit(std::int64_t headroom_mib, F&& f) {
  long pages = 0;
  if (std::FILE* file = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(file, "%ld", &pages) != 1) pages = 0;
    std::fclose(file);
  }
  REQUIRE(pages > 0);
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_AS, &old) == 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                 (static_cast<rlim_t>(headroom_mib) << 20);
  REQUIRE(::setrlimit(RLIMIT_AS, &low) == 0);
  auto result = [&] {
    try {
      return f();
    } catch (...) {
      ::setrlimit(RLIMIT_AS, &old);
      throw;
    }
  }();
  REQUIRE(::setrlimit(RLIMIT_AS, &old) == 0);
  return result;
}

}  // namespace strata::test
