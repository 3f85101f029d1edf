// strata::DeviceRuntime for CUDA: checked allocation from the stream-ordered pool, byte copies
// between host and device, and a strided element copy kernel on the device.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "cuda/block_cache.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/launch_mode.cuh"
#include "cuda/strided_copy.hpp"
#include "strata/dtype.hpp"
#include "strata/tuning.hpp"

namespace strata::cuda {

// ---- launch mode (launch_mode.cuh) ---------------------------------------------------------
namespace {
// -1: not read yet; else a LaunchMode. Relaxed: every thread that reads the
// variable derives the same value, and set_launch_mode is for benchmarks.
std::atomic<int> g_launch_mode{-1};
thread_local int t_capturing = 0;
// Captures in progress on all threads: the block cache stands aside while
// any runs (CudaRuntime::cache_bypass).
std::atomic<int> g_captures{0};
}  // namespace

LaunchMode launch_mode() {
  int m = g_launch_mode.load(std::memory_order_relaxed);
  if (m >= 0) return static_cast<LaunchMode>(m);
  // The switchboard has checked the name against this list.
  const std::string& e = tuning().cuda_launch;
  const char* names[] = {"pdl", "ex", "plain", "graph"};
  m = 0;
  for (int i = 0; i < 4; ++i)
    if (e == names[i]) m = i;
  g_launch_mode.store(m, std::memory_order_relaxed);
  return static_cast<LaunchMode>(m);
}

void set_launch_mode(LaunchMode m) {
  g_launch_mode.store(static_cast<int>(m), std::memory_order_relaxed);
}

bool thread_capturing() noexcept { return t_capturing > 0; }

namespace {

// Kernel argument for the strided copy: both layouts over one shape.
struct CopyParams {
  int rank;
  std::int64_t numel;
  std::int64_t shape[kMaxDims];
  std::int64_t dst_strides[kMaxDims];
  std::int64_t src_strides[kMaxDims];
  char* dst;
  const char* src;
};

template <class E>
__global__ void strided_copy_kernel(CopyParams p) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < p.numel;
       i += stride) {
    std::int64_t rest = i, doff = 0, soff = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const std::int64_t n = p.shape[d];
      const std::int64_t idx = rest % n;
      rest /= n;
      doff += idx * p.dst_strides[d];
      soff += idx * p.src_strides[d];
    }
    reinterpret_cast<E*>(p.dst)[doff] = reinterpret_cast<const E*>(p.src)[soff];
  }
}

// A transpose of the last two dims (the source unit-stride along rows, the
// destination along columns): the element kernel would read 4 bytes per
// 32-byte sector, so 32 x 32 tiles pass through shared memory instead and
// both sides move whole sectors. The leading dims are decoded once per tile.
constexpr int kTile = 32, kTileRows = 8;

template <class E>
__global__ void __launch_bounds__(kTile* kTileRows) transpose_copy_kernel(CopyParams p) {
  __shared__ E tile[kTile][kTile + 1];  // [col][row]; the pad keeps both phases conflict-free
  const int r = p.rank;
  const std::int64_t rows = p.shape[r - 2], cols = p.shape[r - 1];
  const std::int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  const std::int64_t per_matrix = row_tiles * col_tiles;
  const std::int64_t total = per_matrix * (p.numel / (rows * cols));
  const int tx = threadIdx.x % kTile, ty = threadIdx.x / kTile;
  for (std::int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    std::int64_t rest = t / per_matrix, doff = 0, soff = 0;
    for (int d = r - 3; d >= 0; --d) {
      const std::int64_t idx = rest % p.shape[d];
      rest /= p.shape[d];
      doff += idx * p.dst_strides[d];
      soff += idx * p.src_strides[d];
    }
    const std::int64_t r0 = (t % per_matrix) / col_tiles * kTile;
    const std::int64_t c0 = (t % per_matrix) % col_tiles * kTile;
    const E* src = reinterpret_cast<const E*>(p.src) + soff;
    E* dst = reinterpret_cast<E*>(p.dst) + doff;
    __syncthreads();  // the previous tile's readers are done
#pragma unroll
    for (int i = 0; i < kTile / kTileRows; ++i) {
      const std::int64_t row = r0 + tx, col = c0 + ty + kTileRows * i;
      if (row < rows && col < cols)
        tile[ty + kTileRows * i][tx] = src[row * p.src_strides[r - 2] + col * p.src_strides[r - 1]];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile / kTileRows; ++i) {
      const std::int64_t row = r0 + ty + kTileRows * i, col = c0 + tx;
      if (row < rows && col < cols)
        dst[row * p.dst_strides[r - 2] + col * p.dst_strides[r - 1]] = tile[tx][ty + kTileRows * i];
    }
  }
}

bool is_transpose(const CopyParams& p) {
  return p.rank >= 2 && p.src_strides[p.rank - 2] == 1 && p.src_strides[p.rank - 1] != 1 &&
         p.dst_strides[p.rank - 1] == 1 && p.shape[p.rank - 2] > 1 && p.shape[p.rank - 1] > 1;
}

template <class E>
void launch_strided_copy(const CopyParams& p, cudaStream_t st) {
  const int threads = 256;
  if (is_transpose(p)) {
    const std::int64_t rows = p.shape[p.rank - 2], cols = p.shape[p.rank - 1];
    const std::int64_t tiles =
        (rows + kTile - 1) / kTile * ((cols + kTile - 1) / kTile) * (p.numel / (rows * cols));
    transpose_copy_kernel<E>
        <<<static_cast<int>(tiles < 65536 ? tiles : 65536), kTile * kTileRows, 0, st>>>(p);
  } else {
    const std::int64_t want = (p.numel + threads - 1) / threads;
    const int blocks = static_cast<int>(want < 65536 ? want : 65536);
    strided_copy_kernel<E><<<blocks, threads, 0, st>>>(p);
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void strided_copy_async(const StridedLayout& dst, const StridedLayout& src, std::size_t itemsize,
                        cudaStream_t st) {
  CopyParams p{};
  p.rank = dst.rank;
  p.numel = 1;
  for (int d = 0; d < dst.rank; ++d) {
    p.shape[d] = dst.shape[d];
    p.dst_strides[d] = dst.strides[d];
    p.src_strides[d] = src.strides[d];
    p.numel *= dst.shape[d];
  }
  if (p.numel == 0) return;
  p.dst = static_cast<char*>(dst.data);
  p.src = static_cast<const char*>(src.data);
  switch (itemsize) {
    case 1:
      launch_strided_copy<std::uint8_t>(p, st);
      break;
    case 2:
      launch_strided_copy<std::uint16_t>(p, st);
      break;
    case 4:
      launch_strided_copy<std::uint32_t>(p, st);
      break;
    case 8:
      launch_strided_copy<std::uint64_t>(p, st);
      break;
    default:
      fail("cuda.copy_strided", "unsupported item size ", itemsize);
  }
}

namespace {

bool is_row_major(const StridedLayout& l) {
  std::int64_t expect = 1;
  for (int d = l.rank - 1; d >= 0; --d) {
    if (l.shape[d] != 1 && l.strides[d] != expect) return false;
    expect *= l.shape[d];
  }
  return true;
}

// Makes `index` current for the scope and restores the previous device.
// `needed` false (one visible device: index 0 is the only one, and current)
// skips the cudaGetDevice of a per-op allocation.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index, bool needed = true) {
    if (!needed) return;
    CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != index) CUDA_CHECK(cudaSetDevice(index));
    changed_ = prev_ != index;
  }
  ~DeviceGuard() {
    if (changed_) (void)cudaSetDevice(prev_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int prev_ = 0;
  bool changed_ = false;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  CudaRuntime() { count_ = probe_devices(&why_); }

  DeviceType type() const override { return DeviceType::cuda; }
  int device_count() const override { return count_; }
  std::string unavailable_reason() const override { return count_ > 0 ? std::string() : why_; }

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

  // Allocations come from the device's default stream-ordered pool
  // (cudaMallocAsync / cudaFreeAsync on the legacy default stream), whose
  // release threshold is raised to UINT64_MAX on first use: freed blocks stay
  // reserved by the pool, so after warm-up an op's output costs no
  // cudaMalloc and no page mapping. Ordering (see docs/cuda.md, "Memory"):
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
  // other on a blocking stream. Two different streams of the caller's own
  // are not ordered with each other: a tensor used on one is synchronised
  // before its last reference goes, if another stream may allocate next
  // (PyTorch asks the same of a tensor used off its allocation stream:
  // record_stream). While any thread captures a graph the cache stands
  // aside both ways (cache_bypass).
  // Devices without memory-pool support fall back to cudaMalloc / cudaFree
  // (and no cache: cudaFree synchronises, which the cache would remove).
  void* allocate(std::size_t nbytes, int index) override {
    check_index(index, "cuda.allocate");
    if (nbytes == 0) return nullptr;
    if (!pool_ready(index)) return device_allocate(nbytes, index);
    if (BlockCache* c = caches_[index].load(std::memory_order_acquire))
      return c->allocate(nbytes, cache_bypass());
    return device_allocate(nbytes, index);
  }

  void deallocate(void* p, int index) noexcept override {
    if (!p) return;
    BlockCache* c = index >= 0 && index < kMaxDevices
                        ? caches_[index].load(std::memory_order_acquire)
                        : nullptr;
    if (c != nullptr) {
      c->release(p, cache_bypass());  // calls device_free unless it keeps p
    } else {
      device_free(p, index);
    }
  }

  // Testing hooks (the functions of the same names below).
  BlockCache* cache_for_test(int index) {
    check_index(index, "cuda.block_cache");
    (void)pool_ready(index);
    return caches_[index].load(std::memory_order_acquire);
  }

  void copy_bytes(void* dst, Device dst_dev, const void* src, Device src_dev,
                  std::size_t nbytes) override {
    if (nbytes == 0) return;
    const int index = dst_dev.type == DeviceType::cuda ? dst_dev.index : src_dev.index;
    check_index(index, "cuda.copy_bytes");
    DeviceGuard g(index);
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
    const std::size_t isz = itemsize(dt);
    DeviceGuard g(dev.index);
    if (is_row_major(dst) && is_row_major(src)) {
      CUDA_CHECK(
          cudaMemcpy(dst.data, src.data, std::size_t(numel) * isz, cudaMemcpyDeviceToDevice));
    } else {
      strided_copy_async(dst, src, isz, nullptr);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  void synchronize(int index) override {
    check_index(index, "cuda.synchronize");
    DeviceGuard g(index);
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  // ---- streams and graphs (strata/graph.hpp, docs/graphs.md) ---------------
  void* create_stream(int index) override {
    check_index(index, "Stream");
    DeviceGuard g(index);
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreate(&s));  // blocking: ordered with the legacy default stream
    return s;
  }
  void destroy_stream(void* s, int index) noexcept override {
    if (s == nullptr) return;
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    if (prev != index) (void)cudaSetDevice(index);
    (void)cudaStreamSynchronize(static_cast<cudaStream_t>(s));
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(s));
    if (prev != index) (void)cudaSetDevice(prev);
  }
  void synchronize_stream(void* s, int index) override {
    DeviceGuard g(index);
    CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
  }
  // Thread-local capture: calls that are illegal while capturing (a
  // cudaMalloc, a synchronisation, a legacy-stream copy) fail when this
  // thread makes them, and other threads stay free to use the device.
  void begin_capture(void* s, int index) override {
    check_index(index, "Graph::capture");
    DeviceGuard g(index);
    CUDA_CHECK(
        cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal));
    ++t_capturing;
    g_captures.fetch_add(1, std::memory_order_relaxed);
  }
  void* end_capture(void* s, int index) override {
    capture_ended();
    DeviceGuard g(index);
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
    capture_ended();
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    if (prev != index) (void)cudaSetDevice(index);
    cudaGraph_t graph = nullptr;
    if (cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph) == cudaSuccess && graph)
      (void)cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    if (prev != index) (void)cudaSetDevice(prev);
  }
  void launch_graph(void* exec, void* s, int index) override {
    DeviceGuard g(index);
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
    DeviceGuard g(index);
    CUDA_CHECK(
        cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s)));
  }
  void destroy_graph(void* exec, int index) noexcept override {
    if (exec == nullptr) return;
    int prev = 0;
    if (cudaGetDevice(&prev) != cudaSuccess) return;
    if (prev != index) (void)cudaSetDevice(index);
    // A graph may still be running: its memory must outlive it.
    (void)cudaDeviceSynchronize();
    (void)cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
    if (prev != index) (void)cudaSetDevice(prev);
  }

 private:
  static void capture_ended() noexcept {
    if (t_capturing == 0) return;
    --t_capturing;
    g_captures.fetch_sub(1, std::memory_order_relaxed);
  }

  // The cache stands aside while a graph is recorded: a block it handed out
  // inside a capture would be baked into the graph and then reused under it
  // (the pool's cudaMallocAsync fails there instead, as Graph::capture
  // promises), and a free inside a capture must reach cudaFreeAsync, whose
  // failure invalidates the capture, rather than a free list. Any thread's
  // capture counts: while a blocking stream records, every use of the legacy
  // stream fails, and the cache must not make some of them succeed. The
  // thread-local flag alone would miss no capture of this thread; the count
  // is relaxed because a capture on another thread is not ordered with this
  // thread's calls anyway. A stream's own capture status
  // (cudaStreamIsCapturing) is not asked: allocations carry no stream, and
  // asking would be a CUDA call per allocation, the cost the cache removes.
  static bool cache_bypass() noexcept {
    return t_capturing > 0 || g_captures.load(std::memory_order_relaxed) > 0;
  }

  // A block straight from the pool (or cudaMalloc): on out of memory the
  // block cache is emptied and the stream drained (blocks freed on it may
  // only become reusable then), then the allocation is tried once more.
  void* device_allocate(std::size_t nbytes, int index) {
    DeviceGuard g(index, count_ > 1);
    const bool pooled = pool_ready(index);
    void* p = nullptr;
    cudaError_t err =
        pooled ? cudaMallocAsync(&p, nbytes, cudaStreamLegacy) : cudaMalloc(&p, nbytes);
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

  void device_free(void* p, int index) noexcept {
    int prev = index;  // one device: it is current
    if (count_ > 1 && cudaGetDevice(&prev) != cudaSuccess) prev = index;
    if (prev != index) (void)cudaSetDevice(index);
    // Never throws: a failing free (driver shutting down) is only reported.
    const bool pooled = index >= 0 && index < kMaxDevices &&
                        pool_state_[index].load(std::memory_order_acquire) == kPooled;
    const cudaError_t err = pooled ? cudaFreeAsync(p, cudaStreamLegacy) : cudaFree(p);
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      (void)cudaGetLastError();
      std::fprintf(stderr, "strata: %s failed: %s\n", pooled ? "cudaFreeAsync" : "cudaFree",
                   cudaGetErrorString(err));
    }
    if (prev != index) (void)cudaSetDevice(prev);
  }

  void check_index(int index, const char* op) const {
    if (count_ == 0) fail(op, "no usable CUDA device: ", why_);
    check(index >= 0 && index < count_, op, "device index ", index, " out of range (", count_,
          " CUDA device", count_ == 1 ? "" : "s", ")");
  }

  // Per device: the default pool configured (kPooled), no pool support
  // (kPlain), or not yet looked at (0). The first allocation on a device
  // sets it; the state never changes afterwards.
  static constexpr int kMaxDevices = 64;
  static constexpr int kPooled = 1, kPlain = 2;
  bool pool_ready(int index) {
    if (index >= kMaxDevices) return false;
    const int st = pool_state_[index].load(std::memory_order_acquire);
    if (st != 0) return st == kPooled;
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (pool_state_[index].load(std::memory_order_relaxed) == 0) {
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

  int count_ = 0;
  std::string why_;
  std::mutex pool_mu_;
  std::atomic<int> pool_state_[kMaxDevices] = {};
  std::atomic<BlockCache*> caches_[kMaxDevices] = {};  // null: no cache on that device
};

CudaRuntime* runtime_for_test() {
  return dynamic_cast<CudaRuntime*>(device_runtime(DeviceType::cuda));
}

}  // namespace

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

// Testing hook for tests/cuda/test_cuda_pool.cpp (declared there, not in a
// public header): the default pool's reserved and used bytes on `index`
// after the legacy default stream drains. False when the device has no pool.
// The block cache's free blocks are handed back first, so `used` counts the
// bytes of live tensors only.
bool pool_stats_for_test(int index, std::uint64_t* reserved, std::uint64_t* used) {
  if (CudaRuntime* rt = runtime_for_test())
    if (BlockCache* c = rt->cache_for_test(index)) (void)c->trim();
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, index));
  if (!supported) return false;
  DeviceGuard g(index);
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
  CudaRuntime* rt = runtime_for_test();
  BlockCache* c = rt != nullptr ? rt->cache_for_test(index) : nullptr;
  if (c != nullptr) *out = c->stats();
  return c != nullptr;
}
std::size_t block_cache_trim_for_test(int index) {
  CudaRuntime* rt = runtime_for_test();
  BlockCache* c = rt != nullptr ? rt->cache_for_test(index) : nullptr;
  return c != nullptr ? c->trim() : 0;
}

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
