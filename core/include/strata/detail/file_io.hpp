#pragma once
// Whole-file reads and replacing writes for the files the library reads and
// writes (.npy in core, the weights and config files in nn). Not part of the
// public API. Errors are strata::Error naming the path and errno's text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata::detail {

// The file's bytes; `op` starts the error message ("load_safetensors").
std::vector<std::uint8_t> read_file_bytes(const std::string& path, const char* op);

// Writes a file so that a reader never sees a partial one: a regular file
// (new or existing) is written to a temporary file in its own directory,
// flushed to disk and renamed over the target on commit(); an existing
// target keeps its permission bits, a symlink is written through (the link
// stays, the file it names is replaced), a character device or FIFO is
// written in place. Destroyed without commit(), the temporary is removed
// and the target is untouched.
class ReplacingFile {
 public:
  ReplacingFile(const std::string& path, const char* op);
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;
  ~ReplacingFile();

  void write(const void* data, std::size_t n);
  void commit();

 private:
  [[noreturn]] void fail_errno(const std::string& what);

  std::string path_;    // as given, for messages
  std::string target_;  // the file that ends up holding the bytes
  std::string temp_;    // empty when writing in place
  const char* op_;
  int fd_ = -1;
};

}  // namespace strata::detail
