// resident_blocks (kernel_occupancy.hpp): a fixed open-addressed table of
// kernels, each with one slot per device. A slot holds the answer + 1 (0:
// not asked yet); two threads that miss at once both ask CUDA, which is
// harmless (raising the limit twice to the same value), and store the same
// answer.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "cuda/cuda_check.hpp"
#include "cuda/runtime/kernel_occupancy.hpp"
#include "strata/error.hpp"

namespace strata::cuda {
namespace {

constexpr int kMaxDevices = 64;
constexpr std::size_t kSlots = 1024;  // kernels: every table of every launcher fits

struct Entry {
  std::atomic<const void*> kernel{nullptr};
  std::atomic<int> blocks_plus_one[kMaxDevices] = {};
};

Entry& entry_of(const void* kernel) {
  static Entry table[kSlots];
  std::size_t i = (reinterpret_cast<std::uintptr_t>(kernel) >> 4) % kSlots;
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) % kSlots) {
    const void* k = table[i].kernel.load(std::memory_order_acquire);
    if (k == kernel) return table[i];
    if (k == nullptr) {
      const void* expected = nullptr;
      if (table[i].kernel.compare_exchange_strong(expected, kernel, std::memory_order_acq_rel) ||
          expected == kernel)
        return table[i];
    }
  }
  fail("cuda", "more than ", kSlots, " kernels asked for their occupancy");
}

}  // namespace

int resident_blocks(const void* kernel, int threads, std::size_t smem, int dev) {
  check(dev >= 0 && dev < kMaxDevices, "cuda", "device ", dev, " is past the ", kMaxDevices,
        " this build handles");
  std::atomic<int>& slot = entry_of(kernel).blocks_plus_one[dev];
  const int cached = slot.load(std::memory_order_acquire);
  if (cached > 0) return cached - 1;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int n = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem) != cudaSuccess) {
    (void)cudaGetLastError();
    n = 0;
  }
  slot.store(n + 1, std::memory_order_release);
  return n;
}

}  // namespace strata::cuda
