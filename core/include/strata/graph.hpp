#pragma once
// Streams and captured graphs: record the device work of a fixed sequence
// of op calls once, then replay it with one launch (CUDA graphs). A decode
// step of a small model is a hundred tiny kernels whose cost is their
// launches; replaying them as one graph removes the host side of every
// launch. docs/graphs.md says what may be captured and why.
//
//   strata::Stream s(Device::cuda(0));
//   OpOptions opt;  opt.stream = s.handle();
//   strata::Graph g = strata::Graph::capture(s, [&] { add_out(y, a, b, opt); });
//   g.replay(s);  // runs add_out's kernel again, on whatever a and b now hold
//
// A graph keeps the pointers and sizes its ops saw: replaying it reads and
// writes the same memory, so the inputs that change between replays live in
// buffers the caller overwrites in place before each replay.
#include <functional>
#include <memory>

#include "strata/device.hpp"

namespace strata {

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

 private:
  struct Deleter {
    Device dev;
    void operator()(void* s) const noexcept;
  };
  std::unique_ptr<void, Deleter> handle_{nullptr, Deleter{Device::cpu()}};
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
  struct Deleter {
    Device dev;
    void operator()(void* g) const noexcept;
  };
  std::unique_ptr<void, Deleter> exec_{nullptr, Deleter{Device::cpu()}};
  Device device_ = Device::cpu();
};

}  // namespace strata
