#include "strata/storage.hpp"

#include <memory>
#include <new>
#include <utility>

#include "host_block_cache.hpp"
#include "strata/device_runtime.hpp"
#include "strata/error.hpp"

namespace strata {

namespace {

// The runtime that owns `dev`'s memory, checked to be built and usable.
DeviceRuntime& runtime_for(Device dev, const char* op) {
  DeviceRuntime* rt = device_runtime(dev.type);
  STRATA_CHECK(rt != nullptr, op, device_type_name(dev.type), " backend not built (device ",
               dev.str(), ")");
  const int count = rt->device_count();
  STRATA_CHECK(count > 0, op, "device ", dev.str(), " unavailable: ", rt->unavailable_reason());
  STRATA_CHECK(dev.index >= 0 && dev.index < count, op, "device ", dev.str(), " out of range (",
               count, " ", device_type_name(dev.type), " device(s))");
  return *rt;
}

}  // namespace

Storage::Storage(void* data, std::size_t nbytes, Device device, bool owned,
                 std::shared_ptr<void> keep_alive)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      owned_(owned),
      keep_alive_(std::move(keep_alive)) {}

std::shared_ptr<Storage> Storage::allocate(std::size_t nbytes, Device device) {
  void* p = nullptr;
  if (device.is_cpu()) {
    try {
      // A zero-byte request still gets a unique, aligned, non-null block.
      p = detail::host_allocate(nbytes == 0 ? 1 : nbytes);
    } catch (const std::bad_alloc&) {
      fail("Storage::allocate", "out of host memory allocating ", nbytes, " bytes");
    }
  } else {
    DeviceRuntime& rt = runtime_for(device, "Storage::allocate");
    p = rt.allocate(nbytes, device.index);
  }
  // The Storage and its control block in one heap block (a small op's
  // output is allocated per call). If that allocation throws, no Storage
  // owns p yet: free it here.
  struct Block : Storage {  // make_shared needs a public constructor
    Block(void* d, std::size_t n, Device dev) : Storage(d, n, dev, true, nullptr) {}
  };
  try {
    return std::make_shared<Block>(p, nbytes, device);
  } catch (...) {
    if (device.is_cpu()) {
      detail::host_release(p, nbytes == 0 ? 1 : nbytes);
    } else {
      device_runtime(device.type)->deallocate(p, device.index);
    }
    throw;
  }
}

std::shared_ptr<Storage> Storage::wrap(void* data, std::size_t nbytes, Device device,
                                       std::shared_ptr<void> keep_alive) {
  STRATA_CHECK(data != nullptr || nbytes == 0, "Storage::wrap", "null data pointer with nbytes ",
               nbytes);
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device, false, std::move(keep_alive)));
}

Storage::~Storage() {
  if (!owned_) return;
  if (device_.is_cpu()) {
    detail::host_release(data_, nbytes_ == 0 ? 1 : nbytes_);
  } else if (DeviceRuntime* rt = device_runtime(device_.type)) {
    rt->deallocate(data_, device_.index);
  }
}

}  // namespace strata
