// The cuBLAS context of the cuda matmul (cublas_context.hpp): handles per
// thread and device, the GEMM workspace per thread, device and stream, the
// device pool's release threshold, and the stream-ordered temporaries.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "cuda/matmul/cublas_context.hpp"
#include "strata/error.hpp"

namespace strata::cuda {

void throw_cublas(cublasStatus_t status, const char* call) {
  fail("matmul", "cuda: ", call, " failed: ", cublasGetStatusName(status));
}

namespace {

constexpr std::uint64_t kPoolKeepBytes = std::uint64_t(256) << 20;

struct HandleCache {
  std::vector<CublasHandles> per_device;
  ~HandleCache() {
    for (CublasHandles& h : per_device) {
      if (h.blas) (void)cublasDestroy(h.blas);
      if (h.lt) (void)cublasLtDestroy(h.lt);
    }
  }
};

// The GEMM workspace of this thread's calls on (device, stream): allocated
// once and kept, as PyTorch keeps one per handle and stream, so a decode
// step's small GEMMs do not each allocate and free 32 MiB. One thread's
// calls on one stream run in order, so they may share it.
void* workspace(int dev, cudaStream_t st) {
  struct Entry {
    int dev;
    cudaStream_t stream;
    void* block;
  };
  struct Cache {
    std::vector<Entry> entries;
    ~Cache() {
      for (const Entry& e : entries) (void)cudaFree(e.block);  // errors ignored at exit
    }
  };
  thread_local Cache cache;
  for (const Entry& e : cache.entries)
    if (e.dev == dev && e.stream == st) return e.block;
  void* block = nullptr;
  CUDA_CHECK(cudaMalloc(&block, kWorkspaceBytes));
  cache.entries.push_back({dev, st, block});
  return block;
}

}  // namespace

int current_device() {
  static const int device_count = [] {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }();
  int dev = 0;
  if (device_count != 1) CUDA_CHECK(cudaGetDevice(&dev));
  return dev;
}

CublasHandles& cublas_handles(int dev) {
  thread_local HandleCache cache;
  if (cache.per_device.size() <= static_cast<std::size_t>(dev)) cache.per_device.resize(dev + 1);
  CublasHandles& h = cache.per_device[dev];
  if (!h.blas) {
    CUBLAS_CHECK(cublasCreate(&h.blas));
    CUBLAS_CHECK(cublasSetMathMode(h.blas, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  }
  if (!h.lt) CUBLAS_CHECK(cublasLtCreate(&h.lt));
  return h;
}

// cublasSetStream resets the workspace, so both are set together, and only
// when the stream differs from the last call's.
void* bind_stream(CublasHandles& h, int dev, cudaStream_t st) {
  if (h.bound && h.stream == st) return h.workspace;
  h.bound = false;
  CUBLAS_CHECK(cublasSetStream(h.blas, st));
  void* ws = workspace(dev, st);
  CUBLAS_CHECK(cublasSetWorkspace(h.blas, ws, kWorkspaceBytes));
  h.stream = st;
  h.workspace = ws;
  h.bound = true;
  return ws;
}

// After the first call per device (of the first 64) one atomic load, no
// lock.
void keep_pool_warm(int dev) {
  static std::atomic<std::uint64_t> seen{0};
  const std::uint64_t bit = dev < 64 ? std::uint64_t(1) << dev : 0;
  if (bit != 0 && (seen.load(std::memory_order_acquire) & bit) != 0) return;
  struct Mark {  // set once the pool is configured (also when this returns early)
    std::uint64_t bit;
    ~Mark() {
      if (bit != 0) seen.fetch_or(bit, std::memory_order_release);
    }
  } mark{bit};
  static std::mutex mu;
  static std::vector<bool> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.size() <= static_cast<std::size_t>(dev)) done.resize(dev + 1, false);
  if (done[dev]) return;
  done[dev] = true;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
    std::uint64_t current = 0;
    if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &current) == cudaSuccess &&
        current < kPoolKeepBytes) {
      std::uint64_t keep = kPoolKeepBytes;
      (void)cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    }
  }
  (void)cudaGetLastError();
}

Scratch::~Scratch() {
  for (int i = 0; i < count_; ++i) (void)cudaFreeAsync(blocks_[i], stream_);
}

void* Scratch::get(std::size_t bytes) {
  check(count_ < kMaxBlocks, "matmul", "cuda: too many temporaries");
  void* p = nullptr;
  CUDA_CHECK(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 16), stream_));
  blocks_[count_++] = p;
  return p;
}

}  // namespace strata::cuda
