#pragma once
// A scratch directory for one test case of the CLI's unit tests, removed
// with everything in it at the end.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace strata::cli::test {

struct TempDir {
  std::filesystem::path path;
  // A fresh directory in the system's temp dir: pid and a counter shared by
  // every test file keep names apart.
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("strata_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace strata::cli::test
