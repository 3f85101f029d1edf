// strata::DeviceRuntime for CUDA: the devices, byte and strided copies,
// streams, graph capture and replay, pinned host memory, and the launch
// mode (launch_mode.cuh). Allocation is device_memory.cu's; the strided
// copy kernels are strided_copy.cu's.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/runtime/capture_state.hpp"
#include "cuda/runtime/device_guard.hpp"
#include "cuda/runtime/device_memory.hpp"
#include "cuda/strided_copy.hpp"
#include "strata/dtype.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

// ---- launch mode (launch_mode.cuh) and capture state (capture_state.hpp) ----------------
namespace {
// kModeUnread: not read yet; else a LaunchMode. Relaxed: every thread that
// reads the variable derives the same value, and set_launch_mode is for
// benchmarks.
constexpr int kModeUnread = -1;
std::atomic<int> g_launch_mode{kModeUnread};
// Captures this thread has open.
thread_local int t_open_captures = 0;
// Captures open on all threads: the block cache stands aside while any runs
// (device_memory.cu).
std::atomic<int> g_open_captures{0};
}  // namespace

LaunchMode launch_mode() {
  int mode = g_launch_mode.load(std::memory_order_relaxed);
  if (mode != kModeUnread) return static_cast<LaunchMode>(mode);
  // The switchboard has checked the name against this list (LaunchMode's order).
  const std::string& name = tuning().cuda_launch;
  const char* names[] = {"pdl", "ex", "plain", "graph"};
  mode = 0;
  for (int i = 0; i < 4; ++i)
    if (name == names[i]) mode = i;
  g_launch_mode.store(mode, std::memory_order_relaxed);
  return static_cast<LaunchMode>(mode);
}

void set_launch_mode(LaunchMode m) {
  g_launch_mode.store(static_cast<int>(m), std::memory_order_relaxed);
}

bool thread_capturing() noexcept { return t_open_captures > 0; }

void capture_begun() noexcept {
  ++t_open_captures;
  g_open_captures.fetch_add(1, std::memory_order_relaxed);
}

void capture_finished() noexcept {
  if (t_open_captures == 0) return;
  --t_open_captures;
  g_open_captures.fetch_sub(1, std::memory_order_relaxed);
}

// The thread-local count alone would miss no capture of this thread; the
// global count is relaxed because a capture on another thread is not
// ordered with this thread's calls anyway.
bool any_capture_open() noexcept {
  return t_open_captures > 0 || g_open_captures.load(std::memory_order_relaxed) > 0;
}

namespace {
std::atomic<int> g_streams_alive{0};
}  // namespace

int streams_alive() noexcept { return g_streams_alive.load(std::memory_order_acquire); }

// ---- the runtime ------------------------------------------------------------------------
namespace {

bool is_row_major(const StridedLayout& l) {
  std::int64_t expect = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    if (l.shape[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.shape[d];
  }
  return true;
}

class CudaRuntime final : public DeviceRuntime {
 public:
  CudaRuntime() : device_count_(probe_devices(&unavailable_why_)), memory_(device_count_) {}

  DeviceType type() const override { return DeviceType::cuda; }
  int device_count() const override { return device_count_; }
  std::string unavailable_reason() const override {
    return device_count_ > 0 ? std::string() : unavailable_why_;
  }

  std::string describe(int index) const override {
    check_index(index, "cuda.describe");
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
    char buf[512];
    std::snprintf(buf, sizeof buf, "cuda:%d %s, %.1f GiB, %d SMs, compute capability %d.%d", index,
                  prop.name, double(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                  prop.multiProcessorCount, prop.major, prop.minor);
    return buf;
  }

  // Device memory (device_memory.cu): the stream-ordered pool, the block cache.
  void* allocate(std::size_t nbytes, int index) override {
    check_index(index, "cuda.allocate");
    return memory_.allocate(nbytes, index);
  }
  void deallocate(void* p, int index) noexcept override { memory_.deallocate(p, index); }

  // Testing hook (runtime_block_cache below).
  BlockCache* block_cache(int index) {
    check_index(index, "cuda.block_cache");
    return memory_.block_cache(index);
  }

  void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev,
                  std::size_t nbytes) override {
    if (nbytes == 0) return;
    const int index = dst_dev.type == DeviceType::cuda ? dst_dev.index : src_dev.index;
    check_index(index, "cuda.copy_bytes");
    DeviceGuard guard(index);
    const bool d2d = dst_dev.type == DeviceType::cuda && src_dev.type == DeviceType::cuda;
    if (d2d && dst_dev.index != src_dev.index) {
      CUDA_CHECK(cudaMemcpyPeer(dst, dst_dev.index, src, src_dev.index, nbytes));
    } else {
      // Unified addressing: the runtime infers the direction from the pointers.
      CUDA_CHECK(cudaMemcpy(dst, src, nbytes, cudaMemcpyDefault));
    }
    // Device-to-device cudaMemcpy returns before the copy ends; the contract
    // is synchronous with respect to the host.
    if (d2d) CUDA_CHECK(cudaDeviceSynchronize());
  }

  void copy_strided(const StridedLayout& dst, const StridedLayout& src, DType dt,
                    Device dev) override {
    check(dst.rank == src.rank, "cuda.copy_strided", "rank mismatch: dst ", dst.rank, ", src ",
          src.rank);
    check(dst.rank >= 0 && dst.rank <= kMaxDims, "cuda.copy_strided", "rank ", dst.rank,
          " out of range");
    check_index(dev.index, "cuda.copy_strided");
    std::int64_t numel = 1;
    for (int d = 0; d < dst.rank; ++d) {
      check(dst.shape[d] == src.shape[d], "cuda.copy_strided", "shape mismatch at dim ", d,
            ": dst ", dst.shape[d], ", src ", src.shape[d]);
      numel *= dst.shape[d];
    }
    if (numel == 0) return;
    const std::size_t item_bytes = itemsize(dt);
    DeviceGuard guard(dev.index);
    if (is_row_major(dst) && is_row_major(src)) {
      CUDA_CHECK(cudaMemcpy(dst.data, src.data, std::size_t(numel) * item_bytes,
                            cudaMemcpyDeviceToDevice));
    } else {
      strided_copy_async(dst, src, item_bytes, nullptr);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  void synchronize(int index) override {
    check_index(index, "cuda.synchronize");
    DeviceGuard guard(index);
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  // ---- streams and graphs (strata/graph.hpp, docs/guide/graphs.md) ---------------
  void* create_stream(int index) override {
    check_index(index, "Stream");
    DeviceGuard guard(index);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreate(&s));  // blocking: ordered with the legacy default stream
    g_streams_alive.fetch_add(1, std::memory_order_acq_rel);
    return s;
  }
  void destroy_stream(void* s, int index) noexcept override {
    if (s == nullptr) return;
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (previous != index) (void)cudaSetDevice(index);
    (void)cudaStreamSynchronize(static_cast<cudaStream_t>(s));
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(s));
    g_streams_alive.fetch_sub(1, std::memory_order_acq_rel);
    if (previous != index) (void)cudaSetDevice(previous);
  }
  void synchronize_stream(void* s, int index) override {
    DeviceGuard guard(index);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  }
  // Thread-local capture: calls that are illegal while capturing (a
  // cudaMalloc, a synchronisation, a legacy-stream copy) fail when this
  // thread makes them, and other threads stay free to use the device.
  void begin_capture(void* s, int index) override {
    check_index(index, "Graph::capture");
    DeviceGuard guard(index);
    CUDA_CHECK(
        cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal));
    capture_begun();
  }
  void* end_capture(void* s, int index) override {
    capture_finished();
    DeviceGuard guard(index);
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph);
    if (err != cudaSuccess || graph == nullptr) {
      (void)cudaGetLastError();
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      fail("Graph::capture", "CUDA stream capture failed (", cudaGetErrorString(err),
           "): an op in the body allocated, freed, synchronised or used another stream");
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t ierr = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    if (ierr != cudaSuccess) throw_cuda_error(ierr, "cudaGraphInstantiate", __FILE__, __LINE__);
    return exec;
  }
  void abort_capture(void* s, int index) noexcept override {
    capture_finished();
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (previous != index) (void)cudaSetDevice(index);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph) == cudaSuccess && graph)
      (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (previous != index) (void)cudaSetDevice(previous);
  }
  void launch_graph(void* exec, void* s, int index) override {
    DeviceGuard guard(index);
    CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), static_cast<cudaStream_t>(s)));
  }
  void* allocate_pinned(std::size_t nbytes) override {
    void* p = nullptr;
    const cudaError_t err = cudaMallocHost(&p, nbytes == 0 ? 1 : nbytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      fail("PinnedBuffer", "cudaMallocHost of ", nbytes,
           " bytes failed: ", cudaGetErrorString(err));
    }
    return p;
  }
  void free_pinned(void* p) noexcept override {
    if (p != nullptr) (void)cudaFreeHost(p);
  }
  void copy_to_device_async(void* dst, const void* src, std::size_t nbytes, void* s,
                            int index) override {
    DeviceGuard guard(index);
    CUDA_CHECK(
        cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s)));
  }
  void destroy_graph(void* exec, int index) noexcept override {
    if (exec == nullptr) return;
    int previous = 0;
    if (cudaGetDevice(&previous) != cudaSuccess) return;
    if (previous != index) (void)cudaSetDevice(index);
    // A graph may still be running: its memory must outlive it.
    (void)cudaDeviceSynchronize();
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
    if (previous != index) (void)cudaSetDevice(previous);
  }

 private:
  void check_index(int index, const char* op) const {
    if (device_count_ == 0) fail(op, "no usable CUDA device: ", unavailable_why_);
    check(index >= 0 && index < device_count_, op, "device index ", index, " out of range (",
          device_count_, " CUDA device", device_count_ == 1 ? "" : "s", ")");
  }

  // In this order: the constructor's probe fills unavailable_why_, and
  // memory_ takes the count.
  std::string unavailable_why_;  // why there is no device (device_count_ == 0)
  int device_count_ = 0;
  DeviceMemory memory_;
};

}  // namespace

BlockCache* runtime_block_cache(int index) {
  auto* runtime = dynamic_cast<CudaRuntime*>(device_runtime(DeviceType::cuda));
  return runtime != nullptr ? runtime->block_cache(index) : nullptr;
}

int probe_devices(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    // Without a driver this is an error, not zero devices: report it as such.
    (void)cudaGetLastError();
    if (why) *why = std::string("no CUDA device: ") + cudaGetErrorString(err);
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device found";
  return n;
}

std::unique_ptr<DeviceRuntime> make_runtime() { return std::make_unique<CudaRuntime>(); }

// Testing hooks for tests/cuda/test_cuda_concurrency.cpp: a stream of the
// caller's own (blocking with respect to the legacy default stream, which
// the pool allocates on, so tensors allocated by other threads are ready
// before work on it starts) and a wait for it.
void* stream_create_for_test() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreate(&s));
  return s;
}
void stream_sync_for_test(void* s) {
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
}
void stream_destroy_for_test(void* s) { (void)cudaStreamDestroy(static_cast<cudaStream_t>(s)); }

}  // namespace strata::cuda
