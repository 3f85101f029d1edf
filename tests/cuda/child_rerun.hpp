#pragma once
// Reruns some of this test binary's cases in a child process with one
// environment variable set: for the cuda settings read once per process
// (STRATA_GEMV_MAX_M, STRATA_GEMV_ROWS_MAX_M, STRATA_CUDA_BLOCK_CACHE),
// which a test cannot change in its own process. Used by the hidden
// [gemv_all] and [gemv_multirow_all] tests and by [block_cache_on].
#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch.hpp"

namespace strata_test {

// Runs this binary's `tags` with var=value in a child process and CHECKs
// that they pass; its output goes to <temp dir>/<log_name>. Does nothing
// when var is already set: that is the child (or a run that set it by
// hand), so a hidden test may call this without rerunning itself forever.
inline void rerun_with_env(const char* var, const char* value, const std::string& tags,
                           const std::string& log_name) {
  if (std::getenv(var) != nullptr) return;
  // This binary's path (std::system's shell would see its own /proc/self).
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string log = (std::filesystem::temp_directory_path() / log_name).string();
  const std::string cmd =
      std::string(var) + "=" + value + " '" + self + "' '" + tags + "' > '" + log + "' 2>&1";
  INFO(cmd << " (its output: " << log << ")");
  CHECK(std::system(cmd.c_str()) == 0);
}

}  // namespace strata_test
