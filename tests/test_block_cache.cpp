// The cuda runtime's host block cache (backends/cuda/runtime/block_cache.hpp) on a
// fake allocator of host memory that records every call: size classes,
// reuse, the bounds, trim (and trim from inside an out-of-memory retry), the
// capture bypass, the env switch, and two threads never handed one block.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "../backends/cuda/runtime/block_cache.hpp"
#include "catch.hpp"
#include "test_core_util.hpp"

using strata::cuda::BlockCache;
using strata::cuda::BlockCacheLimits;

namespace {

// Host blocks standing in for device memory. Each block starts with an
// atomic owner word, so a test can tell whether two holders share a block.
struct FakeDevice {
  std::mutex mu;
  std::map<void*, std::size_t> live;  // allocated and not yet freed -> bytes
  std::vector<std::size_t> allocs;    // sizes asked of the allocator, in order
  std::vector<void*> frees;           // blocks freed, in order
  std::size_t capacity = SIZE_MAX;    // bytes live at once before "out of memory"
  std::size_t live_bytes = 0;
  int bad_frees = 0;  // double or foreign frees (counted: threads may not REQUIRE)

  void* alloc(std::size_t n) {
    std::lock_guard<std::mutex> lock(mu);
    if (live_bytes + n > capacity) return nullptr;
    void* p = std::calloc(1, std::max(n, sizeof(std::atomic<int>)));
    live.emplace(p, n);
    allocs.push_back(n);
    live_bytes += n;
    return p;
  }
  void free(void* p) {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = live.find(p);
    if (it == live.end()) {
      ++bad_frees;
      return;
    }
    live_bytes -= it->second;
    live.erase(it);
    frees.push_back(p);
    std::free(p);
  }
  std::set<void*> live_set() const {
    std::set<void*> s;
    for (const auto& kv : live) s.insert(kv.first);
    return s;
  }
  ~FakeDevice() {
    CHECK(bad_frees == 0);
    for (const auto& kv : live) std::free(kv.first);
  }
};

// A cache over `dev` whose allocator throws when the fake device is full.
BlockCache make_cache(FakeDevice& dev, BlockCacheLimits limits = {}) {
  return BlockCache(
      [&dev](std::size_t n) {
        void* p = dev.alloc(n);
        if (p == nullptr) strata::fail("fake.alloc", "out of memory at ", n, " bytes");
        return p;
      },
      [&dev](void* p) { dev.free(p); }, limits);
}

}  // namespace

TEST_CASE("block cache: size classes are powers of two from 512 B up to max_block",
          "[block_cache]") {
  FakeDevice dev;
  const BlockCache c = make_cache(dev);
  CHECK(c.size_class(1) == 512);
  CHECK(c.size_class(512) == 512);
  CHECK(c.size_class(513) == 1024);
  CHECK(c.size_class(16) == 512);
  CHECK(c.size_class(3000 * 4) == 16384);
  CHECK(c.size_class(std::size_t(1) << 20) == std::size_t(1) << 20);
  CHECK(c.size_class((std::size_t(1) << 20) + 1) == 0);  // beyond: not cached
  for (std::size_t n = 1; n < (std::size_t(1) << 20); n = n * 3 + 1) {
    const std::size_t cls = c.size_class(n);
    INFO(n);
    CHECK(cls >= n);
    CHECK(cls >= 512);
    CHECK((cls & (cls - 1)) == 0);
    CHECK((cls == 512 || cls / 2 < n));  // the smallest class that fits
  }
  CORE_REQUIRE_ERROR(make_cache(dev, BlockCacheLimits{3000, 4, 1 << 20}), "BlockCache",
                     "max_block 3000");
}

TEST_CASE("block cache: a freed block serves the next request of its class without the allocator",
          "[block_cache]") {
  FakeDevice dev;
  BlockCache c = make_cache(dev);
  void* a = c.allocate(100, false);
  REQUIRE(dev.allocs == std::vector<std::size_t>{512});  // rounded up to the class
  c.release(a, false);
  CHECK(dev.frees.empty());
  void* b = c.allocate(300, false);  // another size of the same class
  CHECK(b == a);
  CHECK(dev.allocs.size() == 1);
  void* d = c.allocate(600, false);  // the next class: a new block
  CHECK(d != a);
  CHECK(dev.allocs == std::vector<std::size_t>{512, 1024});
  // Most recently freed first.
  void* e = c.allocate(400, false);
  c.release(b, false);
  c.release(e, false);
  CHECK(c.allocate(1, false) == e);
  CHECK(c.allocate(1, false) == b);
  const auto s = c.stats();
  CHECK(s.hits == 3);
  CHECK(s.misses == 3);
  CHECK(s.owned_blocks == 3);
  CHECK(s.cached_blocks == 0);
}

TEST_CASE("block cache: blocks above max_block go to the allocator at their size, both ways",
          "[block_cache]") {
  FakeDevice dev;
  BlockCache c = make_cache(dev);
  const std::size_t big = (std::size_t(1) << 20) + 4;
  void* p = c.allocate(big, false);
  CHECK(dev.allocs == std::vector<std::size_t>{big});
  c.release(p, false);
  CHECK(dev.frees == std::vector<void*>{p});
  CHECK(c.stats().cached_blocks == 0);
  CHECK(c.stats().hits + c.stats().misses == 0);
}

TEST_CASE("block cache: the per-class count and the total bytes are bounded", "[block_cache]") {
  FakeDevice dev;
  // 3 blocks per class, 4 KiB in all.
  BlockCache c = make_cache(dev, BlockCacheLimits{1 << 12, 3, 1 << 12});
  std::vector<void*> small;
  for (int i = 0; i < 5; ++i) small.push_back(c.allocate(512, false));
  for (void* p : small) c.release(p, false);
  // The first 3 kept, the last 2 freed at once (and forgotten).
  CHECK(dev.frees == std::vector<void*>{small[3], small[4]});
  CHECK(c.stats().cached_blocks == 3);
  CHECK(c.stats().cached_bytes == 3 * 512);
  CHECK(c.stats().owned_blocks == 3);
  // 1536 B held: one 2 KiB block fits the total, a second does not.
  void* x = c.allocate(2048, false);
  void* y = c.allocate(2048, false);
  c.release(x, false);
  c.release(y, false);
  CHECK(dev.frees.back() == y);
  CHECK(c.stats().cached_bytes == 3 * 512 + 2048);
  CHECK(c.stats().cached_bytes <= (1u << 12));
}

TEST_CASE("block cache: trim hands every free block back, live ones return later",
          "[block_cache]") {
  FakeDevice dev;
  BlockCache c = make_cache(dev);
  void* live = c.allocate(700, false);
  std::vector<void*> freed;
  for (std::size_t n :
       {std::size_t(10), std::size_t(5000), std::size_t(70000), std::size_t(1) << 20})
    freed.push_back(c.allocate(n, false));
  for (void* p : freed) c.release(p, false);
  CHECK(c.trim() == 512 + 8192 + 131072 + (std::size_t(1) << 20));
  CHECK(std::set<void*>(dev.frees.begin(), dev.frees.end()) ==
        std::set<void*>(freed.begin(), freed.end()));
  CHECK(c.stats().cached_blocks == 0);
  CHECK(c.stats().owned_blocks == 1);
  CHECK(dev.live_set() == std::set<void*>{live});
  // The live block is still the cache's: its free is cached, not passed on.
  c.release(live, false);
  CHECK(c.stats().cached_blocks == 1);
  CHECK(dev.live.count(live) == 1);
  void* again = c.allocate(100, false);  // a new block: the old ones are gone
  CHECK(dev.allocs.size() == 6);
  c.release(again, false);
}

TEST_CASE("block cache: an allocator that trims on out-of-memory and retries gets the memory",
          "[block_cache]") {
  // The cuda runtime's allocator: on out of memory, empty the cache (its free
  // blocks hold pool memory), then retry once. alloc runs without the lock.
  FakeDevice dev;
  dev.capacity = 4096;
  BlockCache* self = nullptr;
  int trims = 0;
  BlockCache c(
      [&](std::size_t n) {
        void* p = dev.alloc(n);
        if (p == nullptr) {
          ++trims;
          self->trim();
          p = dev.alloc(n);
        }
        if (p == nullptr) strata::fail("fake.alloc", "out of memory at ", n, " bytes");
        return p;
      },
      [&](void* p) { dev.free(p); });
  self = &c;
  void* a = c.allocate(2048, false);
  void* b = c.allocate(1024, false);
  c.release(a, false);
  c.release(b, false);                  // 3 KiB cached of the 4 KiB
  void* big = c.allocate(3000, false);  // a 4 KiB class: fits only after a trim
  CHECK(trims == 1);
  CHECK(c.stats().cached_blocks == 0);
  CHECK(dev.live_set() == std::set<void*>{big});
  CORE_REQUIRE_ERROR(c.allocate(8192, false), "fake.alloc", "out of memory");
  CHECK(c.stats().owned_blocks == 1);  // the failed request left nothing behind
  c.release(big, false);
}

TEST_CASE("block cache: bypass neither serves from nor fills the cache", "[block_cache]") {
  FakeDevice dev;
  BlockCache c = make_cache(dev);
  void* warm = c.allocate(100, false);
  c.release(warm, false);  // one free 512 B block
  // Allocating with bypass: the allocator at the exact size, the free block stays.
  void* inside = c.allocate(100, true);
  CHECK(inside != warm);
  CHECK(dev.allocs == std::vector<std::size_t>{512, 100});
  CHECK(c.stats().cached_blocks == 1);
  // A block allocated with bypass is freed at once, even when freed without it.
  c.release(inside, false);
  CHECK(dev.frees == std::vector<void*>{inside});
  CHECK(c.stats().cached_blocks == 1);
  // A cache block freed with bypass goes to the allocator and is forgotten.
  void* mine = c.allocate(100, false);
  CHECK(mine == warm);
  c.release(mine, true);
  CHECK(dev.frees.back() == mine);
  CHECK(c.stats().cached_blocks == 0);
  CHECK(c.stats().owned_blocks == 0);
}

TEST_CASE("block cache: two threads are never handed the same block", "[block_cache]") {
  FakeDevice dev;
  BlockCache c = make_cache(dev, BlockCacheLimits{1 << 14, 8, 1 << 16});
  std::atomic<int> clashes{0};
  auto worker = [&](int id) {
    std::mt19937 rng(static_cast<unsigned>(id));
    std::vector<void*> held;
    for (int i = 0; i < 20000; ++i) {
      if (held.size() < 6 && (held.empty() || rng() % 2)) {
        const std::size_t n = 1 + rng() % (std::size_t(1) << 15);  // some above max_block
        void* p = c.allocate(n, rng() % 16 == 0);
        int expect = 0;
        if (!static_cast<std::atomic<int>*>(p)->compare_exchange_strong(expect, id)) ++clashes;
        held.push_back(p);
      } else {
        const std::size_t k = rng() % held.size();
        void* p = held[k];
        held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
        static_cast<std::atomic<int>*>(p)->store(0);
        c.release(p, rng() % 16 == 0);
      }
      if (i % 5000 == 4999) c.trim();
    }
    for (void* p : held) {
      static_cast<std::atomic<int>*>(p)->store(0);
      c.release(p, false);
    }
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();
  CHECK(clashes == 0);
  const auto s = c.stats();
  CHECK(s.cached_blocks <= 8 * 6);  // per class bound, 6 classes (512 B .. 16 KiB)
  CHECK(s.cached_bytes <= (1u << 16));
  CHECK(s.owned_blocks == s.cached_blocks);  // everything was released
  CHECK(dev.live.size() == s.cached_blocks);
  c.trim();
  CHECK(dev.live.empty());
}
