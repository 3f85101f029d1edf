// BlockCache (block_cache.hpp): size classes, free lists and the bounds.
// The lock is never held while alloc runs (its out-of-memory path calls
// trim), nor while release hands a block to free (a device free costs
// microseconds that other threads need not wait for).
#include "cuda/runtime/block_cache.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "strata/error.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

BlockCache::BlockCache(AllocFn alloc, FreeFn free, BlockCacheLimits limits)
    : alloc_(std::move(alloc)), free_(std::move(free)), limits_(limits) {
  check(limits_.max_block >= kMinClass && std::has_single_bit(limits_.max_block), "BlockCache",
        "max_block ", limits_.max_block, " is not a power of two >= ", kMinClass);
  free_lists_.resize(class_index(limits_.max_block) + 1);
  // release pushes without allocating (it is noexcept).
  for (auto& list : free_lists_) list.reserve(limits_.blocks_per_class);
  owned_.reserve(1024);
}

std::size_t BlockCache::size_class(std::size_t nbytes) const noexcept {
  if (nbytes > limits_.max_block) return 0;
  return std::max(kMinClass, std::bit_ceil(nbytes));
}

std::size_t BlockCache::class_index(std::size_t cls) const noexcept {
  return static_cast<std::size_t>(std::countr_zero(cls) - std::countr_zero(kMinClass));
}

void* BlockCache::allocate(std::size_t nbytes, bool bypass) {
  const std::size_t cls = bypass ? 0 : size_class(nbytes);
  if (cls == 0) return alloc_(nbytes);
  const std::size_t idx = class_index(cls);
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<void*>& list = free_lists_[idx];
    if (!list.empty()) {
      void* p = list.back();  // the most recently freed: likeliest in L2
      list.pop_back();
      cached_bytes_ -= cls;
      ++hits_;
      return p;
    }
    ++misses_;
  }
  void* p = alloc_(cls);
  try {
    std::lock_guard<std::mutex> lock(mu_);
    owned_.emplace(p, static_cast<std::uint8_t>(idx));
  } catch (...) {
    free_(p);  // host memory ran out: the block would be lost to the cache
    throw;
  }
  return p;
}

void BlockCache::release(void* p, bool bypass) noexcept {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = owned_.find(p);
    if (it != owned_.end()) {
      const std::size_t idx = it->second;
      const std::size_t cls = kMinClass << idx;
      std::vector<void*>& list = free_lists_[idx];
      if (!bypass && list.size() < limits_.blocks_per_class &&
          cached_bytes_ + cls <= limits_.max_cached_bytes) {
        list.push_back(p);  // within the reserved capacity: no allocation
        cached_bytes_ += cls;
        return;
      }
      owned_.erase(it);
    }
  }
  free_(p);
}

std::size_t BlockCache::trim() noexcept {
  // free runs under the lock here: trim is rare (out of memory, tests), and
  // a block must not be handed out between leaving its list and its free.
  std::lock_guard<std::mutex> lock(mu_);
  const std::size_t bytes = cached_bytes_;
  for (std::vector<void*>& list : free_lists_) {
    for (void* p : list) {
      owned_.erase(p);
      free_(p);
    }
    list.clear();
  }
  cached_bytes_ = 0;
  return bytes;
}

BlockCacheStats BlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  BlockCacheStats s;
  s.hits = hits_;
  s.misses = misses_;
  for (const auto& list : free_lists_) s.cached_blocks += list.size();
  s.cached_bytes = cached_bytes_;
  s.owned_blocks = owned_.size();
  return s;
}

bool block_cache_enabled() { return tuning().cuda_block_cache; }

}  // namespace strata::cuda
