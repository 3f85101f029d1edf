#pragma once
// Storage: bytes on one device, shared by every Tensor view of them.
#include <cstddef>
#include <functional>
#include <memory>

#include "strata/device.hpp"

namespace strata {

class Storage {
 public:
  // Fresh, uninitialised bytes on `device` (64-byte aligned on the host).
  static std::shared_ptr<Storage> allocate(std::size_t nbytes, Device device);
  // Wraps memory the caller owns. `keep_alive` (if any) is held for as long
  // as the storage lives, so a numpy buffer, an xtensor array or a DLPack
  // tensor can be borrowed without a copy. Strata never frees `data`.
  static std::shared_ptr<Storage> wrap(void* data, std::size_t nbytes, Device device,
                                       std::shared_ptr<void> keep_alive = nullptr);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool owns_memory() const { return owned_; }

 private:
  Storage(void* data, std::size_t nbytes, Device device, bool owned,
          std::shared_ptr<void> keep_alive);
  void* data_;
  std::size_t nbytes_;
  Device device_;
  bool owned_;
  std::shared_ptr<void> keep_alive_;
};

}  // namespace strata
