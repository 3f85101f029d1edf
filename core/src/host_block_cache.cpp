// The host block cache (host_block_cache.hpp): exact sizes, one lock, a bound.
#include "host_block_cache.hpp"

#include <algorithm>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "strata/host_memory.hpp"
#include "strata/tuning.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_HOST_CACHE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_HOST_CACHE_ASAN 1
#endif
#endif

namespace strata::detail {
namespace {

constexpr std::align_val_t kAlignment{64};

bool cache_enabled() {
#if defined(STRATA_HOST_CACHE_ASAN)
  return false;
#else
  static const bool on = tuning().host_cache;
  return on;
#endif
}

struct Cache {
  std::mutex mu;
  std::unordered_map<std::size_t, std::vector<void*>> free_by_size;
  std::size_t cached_bytes = 0;
  std::size_t max_bytes = 0;
  std::uint64_t hits = 0, misses = 0;
};

// Never destroyed: Storages freed during static destruction still find it.
Cache& cache() {
  static Cache* const c = [] {
    auto* k = new Cache;
    // An eighth of what the system could give when first used, at most 1 GiB:
    // enough for a step's activations on the machines Strata's CPU users run,
    // small beside what the step itself holds.
    k->max_bytes = static_cast<std::size_t>(
        std::min<std::uint64_t>(available_host_memory_bytes() / 8, std::uint64_t(1) << 30));
    return k;
  }();
  return *c;
}

void* system_allocate(std::size_t nbytes) { return ::operator new(nbytes, kAlignment); }
void system_free(void* p) noexcept { ::operator delete(p, kAlignment); }

}  // namespace

void* host_allocate(std::size_t nbytes) {
  if (nbytes < kHostCacheMinBytes || !cache_enabled()) return system_allocate(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    const auto it = c.free_by_size.find(nbytes);
    if (it != c.free_by_size.end() && !it->second.empty()) {
      void* p = it->second.back();  // the most recently freed: likeliest in cache
      it->second.pop_back();
      c.cached_bytes -= nbytes;
      ++c.hits;
      return p;
    }
    ++c.misses;
  }
  try {
    return system_allocate(nbytes);
  } catch (const std::bad_alloc&) {
    if (host_cache_trim() == 0) throw;
    return system_allocate(nbytes);
  }
}

void host_release(void* p, std::size_t nbytes) noexcept {
  if (p == nullptr) return;
  if (nbytes >= kHostCacheMinBytes && cache_enabled()) {
    Cache& c = cache();
    try {
      std::lock_guard<std::mutex> lock(c.mu);
      if (c.cached_bytes + nbytes <= c.max_bytes) {
        c.free_by_size[nbytes].push_back(p);
        c.cached_bytes += nbytes;
        return;
      }
    } catch (...) {  // the list could not grow: free the block instead
    }
  }
  system_free(p);
}

std::size_t host_cache_trim() noexcept {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const std::size_t freed = c.cached_bytes;
  for (auto& [size, list] : c.free_by_size)
    for (void* p : list) system_free(p);
  c.free_by_size.clear();
  c.cached_bytes = 0;
  return freed;
}

HostCacheStats host_cache_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  HostCacheStats s;
  s.hits = c.hits;
  s.misses = c.misses;
  for (const auto& [size, list] : c.free_by_size) s.cached_blocks += list.size();
  s.cached_bytes = c.cached_bytes;
  s.max_cached_bytes = c.max_bytes;
  return s;
}

}  // namespace strata::detail
