#pragma once
// What the [concurrency] tests share: a bit-for-bit comparison, and a run of
// the same calls from several std::threads at once against the serial result.
#include <atomic>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "strata/tensor.hpp"

namespace concurrency_test {

inline bool bit_identical(const strata::Tensor& a, const strata::Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const strata::Tensor ca = a.contiguous(), cb = b.contiguous();
  const std::size_t bytes = static_cast<std::size_t>(ca.numel()) * strata::itemsize(ca.dtype());
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), bytes) == 0;
}

// run(t) -> std::vector<Tensor>, the results of problem t. Each problem is
// first run serially; then `threads` std::threads, started together so the
// calls overlap, each run their problem `rounds` times, and every result
// must be bit-identical to the serial one, with nothing thrown.
template <class Run>
void run_concurrently(int threads, int rounds, const Run& run) {
  std::vector<std::vector<strata::Tensor>> serial;
  for (int t = 0; t < threads; ++t) serial.push_back(run(t));
  std::vector<std::string> errors(threads);
  std::vector<int> mismatches(threads, 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      try {
        for (int r = 0; r < rounds; ++r) {
          const std::vector<strata::Tensor> got = run(t);
          for (std::size_t j = 0; j < got.size(); ++j)
            if (!bit_identical(got[j], serial[t][j])) ++mismatches[t];
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) {
    INFO("thread " << t);
    CHECK(errors[t].empty());
    CHECK(mismatches[t] == 0);
  }
}

}  // namespace concurrency_test
