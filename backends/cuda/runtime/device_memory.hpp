#pragma once
// Device memory of the cuda runtime: allocations from each device's
// stream-ordered pool, optionally through the host block cache
// (block_cache.hpp). The ordering contract is in device_memory.cu and in
// docs/guide/cuda-runtime.md, "Memory".
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "cuda/runtime/block_cache.hpp"

namespace strata::cuda {

class DeviceMemory {
 public:
  // `device_count` visible devices (one: no device switch per allocation).
  explicit DeviceMemory(int device_count) : device_count_(device_count) {}
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // `index` is a valid device (the runtime checks it); 0 bytes: nullptr.
  void* allocate(std::size_t nbytes, int index);
  void deallocate(void* p, int index) noexcept;

  // The block cache of device `index` once its pool is set up; null when
  // it has none (the cache off, as by default, or no pool). Testing hooks.
  BlockCache* block_cache(int index);

 private:
  void* device_allocate(std::size_t nbytes, int index);
  void device_free(void* p, int index) noexcept;
  bool pool_ready(int index);

  // Per device: the default pool configured (kPooled), no pool support
  // (kPlain), or not yet looked at (kUnknown). The first allocation on a
  // device sets it; the state never changes afterwards.
  static constexpr int kMaxDevices = 64;
  static constexpr int kUnknown = 0, kPooled = 1, kPlain = 2;

  int device_count_ = 0;
  std::mutex pool_mutex_;
  std::atomic<int> pool_state_[kMaxDevices] = {};
  std::atomic<BlockCache*> caches_[kMaxDevices] = {};  // null: no cache on that device
};

// For the testing hooks: the block cache of the process's cuda runtime on
// device `index` (cuda_runtime.cu; an index out of range is a
// strata::Error), null when it has none or no cuda runtime is installed.
BlockCache* runtime_block_cache(int index);

}  // namespace strata::cuda
