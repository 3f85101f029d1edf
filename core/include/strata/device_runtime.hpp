#pragma once
// The seam between core and device backends. Core owns host memory itself;
// for any other device kind a backend installs a DeviceRuntime during
// backend registration (backends/register_backends.cpp). Core never includes
// a vendor header: it only calls through this interface.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "strata/device.hpp"
#include "strata/dtype.hpp"
#include "strata/operand.hpp"

namespace strata {

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;
  virtual DeviceType type() const = 0;
  // Number of usable devices; 0 when there is no device or no driver.
  virtual int device_count() const = 0;
  // Why device_count() is 0 ("no CUDA driver: ..."); empty when usable.
  virtual std::string unavailable_reason() const = 0;
  // One line per device for `strata info` (name, memory, capability).
  virtual std::string describe(int index) const = 0;

  // Throws strata::Error naming the byte count on failure.
  virtual void* allocate(std::size_t nbytes, int index) = 0;
  virtual void deallocate(void* p, int index) noexcept = 0;
  // Contiguous byte copy where at least one side is on this runtime's kind;
  // the other side may be host memory. Synchronous with respect to the host.
  virtual void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev,
                          std::size_t nbytes) = 0;
  // dst[i] = src[i] over the common shape (src broadcast already expanded to
  // dst's shape via zero strides); both on `dev`, same dtype.
  virtual void copy_strided(const StridedLayout& dst, const StridedLayout& src, DType dt,
                            Device dev) = 0;
  // Blocks until queued work on the device is done.
  virtual void synchronize(int index) = 0;

  // Streams and captured graphs (strata/graph.hpp). A runtime without them
  // keeps these defaults, which throw a strata::Error naming the call.
  // A stream made here orders its work after the default stream's and the
  // default stream's after it (CUDA: cudaStreamCreate's blocking flags).
  virtual void* create_stream(int index);
  virtual void destroy_stream(void* stream, int index) noexcept;
  virtual void synchronize_stream(void* stream, int index);
  // Work queued on `stream` between the two calls is recorded, not run;
  // end_capture returns it as an executable graph. abort_capture ends a
  // capture whose recording failed and discards it.
  virtual void begin_capture(void* stream, int index);
  virtual void* end_capture(void* stream, int index);
  virtual void abort_capture(void* stream, int index) noexcept;
  virtual void launch_graph(void* graph, void* stream, int index);
  virtual void destroy_graph(void* graph, int index) noexcept;
  // Page-locked host memory, and a byte copy from it to device memory queued
  // on `stream` (recorded as a graph node while the stream captures).
  virtual void* allocate_pinned(std::size_t nbytes);
  virtual void free_pinned(void* p) noexcept;
  virtual void copy_to_device_async(void* dst, const void* pinned_src, std::size_t nbytes,
                                    void* stream, int index);
};

// Installs the runtime for its device kind and returns the one it replaces
// (null if none), so a test can put a stand-in in place and restore the
// real one afterwards. Memory must be freed by the runtime that allocated
// it: swap only while no tensor of that kind is alive.
std::unique_ptr<DeviceRuntime> install_device_runtime(std::unique_ptr<DeviceRuntime> rt);
// The runtime for `t`, or nullptr when none is built in. Never for cpu.
DeviceRuntime* device_runtime(DeviceType t);

}  // namespace strata
