#pragma once
// Streams and captured graphs: record the device work of a fixed sequence
// of op calls once, then replay it with one launch (CUDA graphs). A decode
// step of a small model is a hundred tiny kernels whose cost is their
// launches; replaying them as one graph removes the host side of every
// launch. docs/guide/graphs.md says what may be captured and why.
//
//   strata::Stream s(Device::cuda(0));
//   OpOptions opt;  opt.stream = s.handle();
//   strata::Graph g = strata::Graph::capture(s, [&] { add_out(y, a, b, opt); });
//   g.replay(s);  // runs add_out's kernel again, on whatever a and b now hold
//
// A graph keeps the pointers and sizes its ops saw: replaying it reads and
// writes the same memory, so the inputs that change between replays live in
// buffers the caller overwrites in place before each replay.
#include <cstddef>
#include <functional>
#include <memory>

#include "strata/device.hpp"

namespace strata {

class Tensor;
class DeviceRuntime;

namespace detail {
// Destroys a runtime handle of one device (a stream, an executable graph)
// through the device runtime's `destroy`.
struct DeviceHandleDeleter {
  Device dev = Device::cpu();
  void (DeviceRuntime::*destroy)(void*, int) noexcept = nullptr;
  void operator()(void* h) const noexcept;
};
}  // namespace detail

// Page-locked host memory from the runtime of a device kind: a host-to-device
// copy queued on a stream (and recorded into a graph) reads it when the copy
// runs, so a graph's per-replay inputs are written here on the host and
// copied by the graph itself. Move-only.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(std::size_t bytes, DeviceType kind);
  void* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Deleter {
    DeviceType kind;
    void operator()(void* p) const noexcept;
  };
  std::unique_ptr<void, Deleter> data_{nullptr, Deleter{DeviceType::cpu}};
  std::size_t size_ = 0;
};

// A device stream (CUDA: made with blocking flags, so the default stream and
// it wait for each other's earlier work). Move-only; the stream is destroyed
// with the object.
class Stream {
 public:
  Stream() = default;
  explicit Stream(Device dev);  // a device with streams (cuda), else strata::Error
  bool defined() const { return handle_ != nullptr; }
  void* handle() const { return handle_.get(); }  // cudaStream_t for OpOptions::stream
  Device device() const { return device_; }
  void synchronize() const;  // blocks until the stream's work is done
  // Queues a copy of dst.nbytes() bytes from `src` into `dst` (contiguous,
  // on this stream's device, at most src.size() bytes). Asynchronous: `src`
  // must not be rewritten before the copy ran (synchronize() first).
  void copy_to_device(const Tensor& dst, const PinnedBuffer& src) const;

 private:
  std::unique_ptr<void, detail::DeviceHandleDeleter> handle_;
  Device device_ = Device::cpu();
};

// Device work recorded from a stream. Move-only.
class Graph {
 public:
  Graph() = default;
  // Runs `body` with `stream` capturing: every op the body queues on the
  // stream (OpOptions::stream = stream.handle()) is recorded instead of run.
  // The body must not allocate or free device memory, synchronise, or read
  // results back on the host: the capture fails with a strata::Error (and
  // the body's own exception, if it throws, propagates after the capture is
  // discarded).
  static Graph capture(const Stream& stream, const std::function<void()>& body);
  bool defined() const { return exec_ != nullptr; }
  // Queues the recorded work on `stream` (any stream of the same device).
  void replay(const Stream& stream) const;

 private:
  std::unique_ptr<void, detail::DeviceHandleDeleter> exec_;
  Device device_ = Device::cpu();
};

}  // namespace strata
