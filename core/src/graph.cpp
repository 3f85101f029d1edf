// Stream and Graph: thin owners of a device runtime's stream and graph
// handles (core/include/strata/graph.hpp). Core knows no CUDA: the runtime
// installed for the device kind does the work.
#include "strata/graph.hpp"

#include <exception>

#include "strata/device_runtime.hpp"
#include "strata/error.hpp"
#include "strata/tensor.hpp"

namespace strata {
namespace {

DeviceRuntime& runtime_with_streams(Device dev, const char* op) {
  STRATA_CHECK(dev.type != DeviceType::cpu, op, "streams and graphs need a device, got ",
               dev.str());
  DeviceRuntime* rt = device_runtime(dev.type);
  STRATA_CHECK(rt != nullptr && rt->device_count() > dev.index, op, dev.str(), " is not available",
               rt != nullptr ? ": " + rt->unavailable_reason() : "");
  return *rt;
}

}  // namespace

void detail::DeviceHandleDeleter::operator()(void* h) const noexcept {
  if (DeviceRuntime* rt = device_runtime(dev.type)) (rt->*destroy)(h, dev.index);
}

Stream::Stream(Device dev) : device_(dev) {
  DeviceRuntime& rt = runtime_with_streams(dev, "Stream");
  handle_ = std::unique_ptr<void, detail::DeviceHandleDeleter>(
      rt.create_stream(dev.index), {dev, &DeviceRuntime::destroy_stream});
}

void Stream::synchronize() const {
  STRATA_CHECK(defined(), "Stream::synchronize", "the stream is undefined");
  device_runtime(device_.type)->synchronize_stream(handle(), device_.index);
}

PinnedBuffer::PinnedBuffer(std::size_t bytes, DeviceType kind) : size_(bytes) {
  STRATA_CHECK(kind != DeviceType::cpu, "PinnedBuffer",
               "page-locked memory belongs to a device "
               "kind's runtime, not cpu");
  DeviceRuntime* rt = device_runtime(kind);
  STRATA_CHECK(rt != nullptr, "PinnedBuffer", device_type_name(kind), " is not built in");
  data_ = std::unique_ptr<void, Deleter>(rt->allocate_pinned(bytes), Deleter{kind});
}

void PinnedBuffer::Deleter::operator()(void* p) const noexcept {
  if (DeviceRuntime* rt = device_runtime(kind)) rt->free_pinned(p);
}

void Stream::copy_to_device(const Tensor& dst, const PinnedBuffer& src) const {
  const char* op = "Stream::copy_to_device";
  STRATA_CHECK(defined(), op, "the stream is undefined");
  STRATA_CHECK(dst.defined() && dst.device() == device_ && dst.is_contiguous(), op,
               "dst must be a contiguous tensor on ", device_.str());
  const auto bytes = static_cast<std::size_t>(dst.numel()) * itemsize(dst.dtype());
  STRATA_CHECK(src.data() != nullptr && bytes <= src.size(), op, "dst holds ", bytes,
               " bytes, the pinned buffer ", src.size());
  device_runtime(device_.type)
      ->copy_to_device_async(dst.data_ptr(), src.data(), bytes, handle(), device_.index);
}

Graph Graph::capture(const Stream& stream, const std::function<void()>& body) {
  STRATA_CHECK(stream.defined(), "Graph::capture", "the stream is undefined");
  const Device dev = stream.device();
  DeviceRuntime& rt = runtime_with_streams(dev, "Graph::capture");
  rt.begin_capture(stream.handle(), dev.index);
  try {
    body();
  } catch (const Error& e) {
    // Most often an op that allocated, freed or synchronised: say so.
    rt.abort_capture(stream.handle(), dev.index);
    fail("Graph::capture", "an op failed while the stream was recording (ops there must not ",
         "allocate, free or synchronise; docs/guide/graphs.md): ", e.what());
  } catch (...) {
    rt.abort_capture(stream.handle(), dev.index);
    throw;
  }
  Graph g;
  g.device_ = dev;
  g.exec_ = std::unique_ptr<void, detail::DeviceHandleDeleter>(
      rt.end_capture(stream.handle(), dev.index), {dev, &DeviceRuntime::destroy_graph});
  return g;
}

void Graph::replay(const Stream& stream) const {
  STRATA_CHECK(defined(), "Graph::replay", "the graph is undefined (capture one first)");
  STRATA_CHECK(stream.defined() && stream.device() == device_, "Graph::replay",
               "the stream must be on the graph's device ", device_.str(), ", got ",
               stream.defined() ? stream.device().str() : std::string("an undefined stream"));
  device_runtime(device_.type)->launch_graph(exec_.get(), stream.handle(), device_.index);
}

}  // namespace strata
