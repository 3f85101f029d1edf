#pragma once
// A host-side cache of freed small device blocks in front of a device's
// allocator (the cuda runtime's stream-ordered pool): after a warm-up, a
// small tensor's allocation and free make no CUDA call at all. Plain C++ (no
// CUDA header): the device allocation and free come in as callbacks, so the
// policy is unit-tested on machines without a GPU (tests/test_block_cache.cpp).
//
// A block goes back to the cache with no device-side ordering: the next owner
// may be handed it while kernels queued earlier still use it. That is safe
// only when those kernels and the next owner's are ordered by their streams;
// docs/guide/cuda-runtime.md, "Memory" states which caller patterns are.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata::cuda {

struct BlockCacheLimits {
  // Largest cached class (a power of two >= kMinClass); larger requests go
  // straight to the allocator at their exact size.
  std::size_t max_block = std::size_t(1) << 20;
  // Free blocks kept per size class, and in all classes together (bytes).
  std::size_t blocks_per_class = 256;
  std::size_t max_cached_bytes = std::size_t(64) << 20;
};

struct BlockCacheStats {
  std::uint64_t hits = 0;         // cacheable requests served from a free block
  std::uint64_t misses = 0;       // cacheable requests that went to the allocator
  std::size_t cached_blocks = 0;  // free blocks held now
  std::size_t cached_bytes = 0;
  std::size_t owned_blocks = 0;  // blocks of a size class, handed out or held
};

class BlockCache {
 public:
  // alloc(bytes) returns a device block or throws; it may call trim() (on an
  // out-of-memory retry) but nothing else of this cache. free(p) must not
  // throw nor call back into the cache.
  using AllocFn = std::function<void*(std::size_t)>;
  using FreeFn = std::function<void(void*)>;
  static constexpr std::size_t kMinClass = 512;

  // limits.max_block a power of two >= kMinClass, else strata::Error.
  BlockCache(AllocFn alloc, FreeFn free, BlockCacheLimits limits = {});
  // Cached blocks are not freed: the runtime's caches live until the process
  // ends, when calling the device is no longer safe (device_memory.cu).
  ~BlockCache() = default;
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // nbytes -> its class (the power of two >= max(nbytes, kMinClass)), or 0
  // when nbytes > max_block (not cached).
  std::size_t size_class(std::size_t nbytes) const noexcept;

  // A block of at least nbytes (> 0): a free block of nbytes' class, else a
  // new one of the class size from alloc. With `bypass` (or above
  // max_block) alloc(nbytes) serves it and the block never enters the cache.
  void* allocate(std::size_t nbytes, bool bypass);
  // Takes back a block from allocate (null: nothing). A block of a class is
  // kept for reuse unless `bypass` or a bound is reached; every other block
  // goes to free at once.
  void release(void* p, bool bypass) noexcept;
  // Hands every free block to free; returns the bytes handed back.
  std::size_t trim() noexcept;

  BlockCacheStats stats() const;

 private:
  std::size_t class_index(std::size_t cls) const noexcept;

  AllocFn alloc_;
  FreeFn free_;
  BlockCacheLimits limits_;
  mutable std::mutex mu_;
  std::vector<std::vector<void*>> free_lists_;  // per class, capacity reserved
  // Every block of a class that alloc gave the cache (live or free) -> its
  // class index: deallocation passes no size, and a block the allocator
  // gave back must be forgotten (its address may return at another size).
  std::unordered_map<void*, std::uint8_t> owned_;
  std::size_t cached_bytes_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0;
};

// STRATA_CUDA_BLOCK_CACHE (strata/tuning.hpp): off by default until a GPU
// run measures what it saves against the ordering it gives up (docs/guide/cuda-runtime.md,
// "Memory").
bool block_cache_enabled();

}  // namespace strata::cuda
