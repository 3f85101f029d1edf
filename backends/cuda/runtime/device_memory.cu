// DeviceMemory (device_memory.hpp): allocations from each device's
// stream-ordered pool, the optional host block cache in front of it, and
// the testing hooks that read the pool's and the cache's counters.
//
// Allocations come from the device's default stream-ordered pool
// (cudaMallocAsync / cudaFreeAsync on the legacy default stream), whose
// release threshold is raised to UINT64_MAX on first use: freed blocks stay
// reserved by the pool, so after warm-up an op's output costs no
// cudaMalloc and no page mapping. Ordering (docs/guide/cuda-runtime.md,
// "Memory"):
//  * the free is stream-ordered on the legacy default stream, so it
//    happens after every kernel queued before it on that stream and, since
//    the legacy stream waits for all blocking streams, on any stream made
//    with cudaStreamCreate's default flags;
//  * work a caller queues on a cudaStreamNonBlocking stream is not ordered
//    with the legacy stream: such a caller synchronises (or records an
//    event that the default stream waits for) before the last reference to
//    a tensor it used goes away, and makes its stream wait for the default
//    stream before using a freshly allocated tensor.
// With STRATA_CUDA_BLOCK_CACHE=1 (off by default), blocks up to 1 MiB
// pass through a host cache first (block_cache.hpp): a freed block goes to a free
// list with no CUDA call and no stream ordering, and the next request of
// its size class takes it back at once. Its previous owner's kernels and
// the next owner's are then ordered only by their streams: both on the
// legacy stream, both on one stream, or one on the legacy stream and the
// other on a blocking stream. Two streams of the caller's are each ordered
// with the legacy stream but not with each other, so while two or more
// strata::Streams are alive the cache stands aside both ways, and frees go
// to the pool, ordered on the legacy stream after every blocking stream's
// earlier work (PyTorch's allocator records the streams a block was used
// on instead: record_stream). It stands aside too while any thread
// captures a graph (cache_bypass).
// Devices without memory-pool support fall back to cudaMalloc / cudaFree
// (and no cache: cudaFree synchronises, which the cache would remove).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>

#include "cuda/cuda_check.hpp"
#include "cuda/runtime/capture_state.hpp"
#include "cuda/runtime/device_guard.hpp"
#include "cuda/runtime/device_memory.hpp"

namespace strata::cuda {
namespace {

// The cache stands aside while a graph is recorded: a block it handed out
// inside a capture would be baked into the graph and then reused under it
// (the pool's cudaMallocAsync fails there instead, as Graph::capture
// promises), and a free inside a capture must reach cudaFreeAsync, whose
// failure invalidates the capture, rather than a free list. Any thread's
// capture counts: while a blocking stream records, every use of the legacy
// stream fails, and the cache must not make some of them succeed. A
// stream's own capture status (cudaStreamIsCapturing) is not asked:
// allocations carry no stream, and asking would be a CUDA call per
// allocation, the cost the cache removes.
bool cache_bypass() noexcept { return any_capture_open() || streams_alive() >= 2; }

}  // namespace

void* DeviceMemory::allocate(std::size_t nbytes, int index) {
  if (nbytes == 0) return nullptr;
  if (!pool_ready(index)) return device_allocate(nbytes, index);
  if (BlockCache* c = caches_[index].load(std::memory_order_acquire))
    return c->allocate(nbytes, cache_bypass());
  return device_allocate(nbytes, index);
}

void DeviceMemory::deallocate(void* p, int index) noexcept {
  if (!p) return;
  BlockCache* c =
      index >= 0 && index < kMaxDevices ? caches_[index].load(std::memory_order_acquire) : nullptr;
  if (c != nullptr) {
    c->release(p, cache_bypass());  // calls device_free unless it keeps p
  } else {
    device_free(p, index);
  }
}

BlockCache* DeviceMemory::block_cache(int index) {
  (void)pool_ready(index);
  return caches_[index].load(std::memory_order_acquire);
}

// A block straight from the pool (or cudaMalloc): on out of memory the
// block cache is emptied and the stream drained (blocks freed on it may
// only become reusable then), then the allocation is tried once more.
void* DeviceMemory::device_allocate(std::size_t nbytes, int index) {
  DeviceGuard guard(index, device_count_ > 1);
  const bool pooled = pool_ready(index);
  void* p = nullptr;
  cudaError_t err = pooled ? cudaMallocAsync(&p, nbytes, cudaStreamLegacy) : cudaMalloc(&p, nbytes);
  if (err == cudaErrorMemoryAllocation && pooled) {
    (void)cudaGetLastError();
    if (BlockCache* c = caches_[index].load(std::memory_order_acquire)) (void)c->trim();
    if (cudaStreamSynchronize(cudaStreamLegacy) == cudaSuccess)
      err = cudaMallocAsync(&p, nbytes, cudaStreamLegacy);
  }
  if (err != cudaSuccess) {
    // Out of memory is not sticky: clearing it keeps the process usable.
    (void)cudaGetLastError();
    fail("cuda.allocate", pooled ? "cudaMallocAsync" : "cudaMalloc", " of ", nbytes,
         " bytes on cuda:", index, " failed: ", cudaGetErrorName(err), " (",
         cudaGetErrorString(err), ")");
  }
  return p;
}

void DeviceMemory::device_free(void* p, int index) noexcept {
  int previous = index;  // one device: it is current
  if (device_count_ > 1 && cudaGetDevice(&previous) != cudaSuccess) previous = index;
  if (previous != index) (void)cudaSetDevice(index);
  // Never throws: a failing free (driver shutting down) is only reported.
  const bool pooled = index >= 0 && index < kMaxDevices &&
                      pool_state_[index].load(std::memory_order_acquire) == kPooled;
  const cudaError_t err = pooled ? cudaFreeAsync(p, cudaStreamLegacy) : cudaFree(p);
  if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
    (void)cudaGetLastError();
    std::fprintf(stderr, "strata: %s failed: %s\n", pooled ? "cudaFreeAsync" : "cudaFree",
                 cudaGetErrorString(err));
  }
  if (previous != index) (void)cudaSetDevice(previous);
}

// Whether device `index` allocates from its default pool, which the first
// call sets up (release threshold raised; the block cache made when it is
// on).
bool DeviceMemory::pool_ready(int index) {
  if (index >= kMaxDevices) return false;
  const int state = pool_state_[index].load(std::memory_order_acquire);
  if (state != kUnknown) return state == kPooled;
  std::lock_guard<std::mutex> lock(pool_mutex_);
  if (pool_state_[index].load(std::memory_order_relaxed) == kUnknown) {
    int supported = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, index));
    if (supported) {
      cudaMemPool_t pool;
      CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
      std::uint64_t threshold = UINT64_MAX;
      CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
      // Never deleted, on purpose: tensors freed during static destruction
      // still reach it, and its free blocks are left to the process's end
      // rather than freed when the CUDA runtime may already be unloading.
      if (block_cache_enabled())
        caches_[index].store(
            new BlockCache([this, index](std::size_t n) { return device_allocate(n, index); },
                           [this, index](void* p) { device_free(p, index); }),
            std::memory_order_release);
    }
    pool_state_[index].store(supported ? kPooled : kPlain, std::memory_order_release);
  }
  return pool_state_[index].load(std::memory_order_relaxed) == kPooled;
}

// Testing hook for tests/cuda/test_cuda_pool.cpp (declared there, not in a
// public header): the default pool's reserved and used bytes on `index`
// after the legacy default stream drains. False when the device has no pool.
// The block cache's free blocks are handed back first, so `used` counts the
// bytes of live tensors only.
bool pool_stats_for_test(int index, std::uint64_t* reserved, std::uint64_t* used) {
  if (BlockCache* c = runtime_block_cache(index)) (void)c->trim();
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, index));
  if (!supported) return false;
  DeviceGuard guard(index);
  CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  cudaMemPool_t pool;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
  CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, reserved));
  CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, used));
  return true;
}

// Testing hooks for tests/cuda/test_cuda_block_cache.cpp: the block cache's
// counters on `index` (false when it has none: the cache off, as by default, or
// no pool), and emptying it.
bool block_cache_stats_for_test(int index, BlockCacheStats* out) {
  BlockCache* c = runtime_block_cache(index);
  if (c != nullptr) *out = c->stats();
  return c != nullptr;
}
std::size_t block_cache_trim_for_test(int index) {
  BlockCache* c = runtime_block_cache(index);
  return c != nullptr ? c->trim() : 0;
}

}  // namespace strata::cuda
