#pragma once
// What every cuBLAS / cuBLASLt call of the cuda matmul (matmul_cublas.cu)
// runs in: this thread's handles for the device, bound to the call's stream
// with their workspace, the device's pool kept warm for the call's
// temporaries, and the temporaries themselves.
//
// Handles: one cuBLAS and one cuBLASLt handle per device and thread, made
// on first use and kept; set to the call's stream (and its workspace) only
// when it differs from the previous call's on that handle. The GEMM
// workspace is kept per thread, device and stream; other temporaries
// (Scratch) come from the stream-ordered allocator (cudaMallocAsync) and go
// back with cudaFreeAsync on the same stream; the device's default pool is
// asked once to keep 256 MiB across synchronisations so that these stay
// pool hits.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace strata::cuda {

// Throws strata::Error naming the cuBLAS call and its status.
[[noreturn]] void throw_cublas(cublasStatus_t status, const char* call);

#define CUBLAS_CHECK(call)                                      \
  do {                                                          \
    const cublasStatus_t strata_blas_status_ = (call);          \
    if (strata_blas_status_ != CUBLAS_STATUS_SUCCESS)           \
      ::strata::cuda::throw_cublas(strata_blas_status_, #call); \
  } while (0)

// Bytes of the GEMM workspace given to cuBLAS and cuBLASLt (cuBLAS's advice
// for Hopper).
inline constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

// This thread's handles on one device.
struct CublasHandles {
  cublasHandle_t blas = nullptr;
  cublasLtHandle_t lt = nullptr;
  // The stream and workspace last given to `blas` (bound): a call on the
  // same stream skips cublasSetStream / cublasSetWorkspace.
  bool bound = false;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
};

// The current device; with one visible device it is 0 and no
// cudaGetDevice is made per call.
int current_device();

// This thread's handles on device `dev`, made on first use.
CublasHandles& cublas_handles(int dev);

// h's cuBLAS handle on stream st with this thread's workspace for (dev, st);
// returns the workspace (kWorkspaceBytes), which cuBLASLt calls get too.
void* bind_stream(CublasHandles& h, int dev, cudaStream_t st);

// Once per device: the default pool keeps 256 MiB reserved over
// synchronisations (it never lowers a larger setting).
void keep_pool_warm(int dev);

// Stream-ordered temporaries, freed on the stream when the call ends (also
// when it throws).
class Scratch {
 public:
  explicit Scratch(cudaStream_t st) : stream_(st) {}
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // At least `bytes` (16 at the least), 16-byte aligned.
  void* get(std::size_t bytes);

 private:
  static constexpr int kMaxBlocks = 8;
  cudaStream_t stream_;
  void* blocks_[kMaxBlocks] = {};
  int count_ = 0;
};

}  // namespace strata::cuda
