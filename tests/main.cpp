// Test runner shared by strata_tests and strata_cuda_tests. The CUDA binary
// exits with 77 (CTest's skip code) when no GPU can be used, so a machine
// without a GPU reports those tests as skipped, never failed.
#if __has_include(<catch2/catch_session.hpp>)
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#endif

#include <cstdio>

#include "strata/registry.hpp"

int main(int argc, char** argv) {
#if defined(STRATA_CUDA_TESTS)
  const strata::BackendInfo* cuda = strata::Registry::get().backend("cuda");
  if (!cuda || !cuda->available) {
    std::printf("strata_cuda_tests: skipped: %s\n",
                cuda ? cuda->why_not.c_str() : "cuda backend unknown");
    return 77;
  }
#endif
  return Catch::Session().run(argc, argv);
}
