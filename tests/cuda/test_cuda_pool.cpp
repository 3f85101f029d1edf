// The CUDA runtime allocates from the device's stream-ordered pool with a
// release threshold that keeps freed memory: after a warm-up, allocating and
// freeing tensors of the same sizes reserves no new device memory, and every
// freed byte goes back to the pool (used returns to its baseline).
#include <cstdint>
#include <vector>

#include "catch.hpp"
#include "strata/elementwise.hpp"
#include "strata/tensor.hpp"

namespace strata::cuda {
// Defined in backends/cuda/cuda_runtime.cu (a testing hook, not public API).
bool pool_stats_for_test(int index, std::uint64_t* reserved, std::uint64_t* used);
}  // namespace strata::cuda

using strata::Device;
using strata::DType;
using strata::Tensor;

namespace {

struct Stats {
  std::uint64_t reserved = 0, used = 0;
};

Stats stats() {
  Stats s;
  REQUIRE(strata::cuda::pool_stats_for_test(0, &s.reserved, &s.used));
  return s;
}

// One round: tensors of several sizes (1 KiB .. 64 MiB) alive at once, then
// freed; each written so the allocation is really used.
void round_of_allocations() {
  std::vector<Tensor> live;
  for (std::int64_t n : {256, 4096, 1 << 16, 1 << 20, 1 << 24}) {
    live.push_back(Tensor::empty({n}, DType::f32, Device::cuda(0)));
    strata::fill_(live.back(), 1.5);
  }
  for (std::int64_t n : {1 << 24, 1 << 20, 3000}) {
    Tensor t = Tensor::empty({n}, DType::f32, Device::cuda(0));
    strata::fill_(t, 2.0);
  }
}

}  // namespace

TEST_CASE("cuda allocations reuse the pool after warm-up", "[cuda][pool]") {
  const Stats before = stats();
  round_of_allocations();
  const Stats warm = stats();
  INFO("before: reserved " << before.reserved << " used " << before.used);
  INFO("warm: reserved " << warm.reserved << " used " << warm.used);
  CHECK(warm.reserved >= warm.used);
  // Everything freed went back to the pool but the pool kept it.
  CHECK(warm.used == before.used);
  CHECK(warm.reserved > before.used);
  for (int i = 0; i < 20; ++i) {
    round_of_allocations();
    const Stats s = stats();
    INFO("round " << i << ": reserved " << s.reserved << " used " << s.used);
    REQUIRE(s.reserved == warm.reserved);
    REQUIRE(s.used == before.used);
  }
}

TEST_CASE("cuda pool memory freed and reused keeps values right", "[cuda][pool]") {
  // A tensor freed while its fill may still be queued, then the same block
  // reused by the next allocation: stream order keeps the new values.
  for (int i = 0; i < 50; ++i) {
    {
      Tensor t = Tensor::empty({1 << 20}, DType::f32, Device::cuda(0));
      strata::fill_(t, double(i));
    }
    Tensor u = Tensor::empty({1 << 20}, DType::f32, Device::cuda(0));
    strata::fill_(u, double(i) + 0.5);
    const auto h = u.to(Device::cpu()).to_vector<double>();
    REQUIRE(h.front() == double(i) + 0.5);
    REQUIRE(h.back() == double(i) + 0.5);
  }
}
