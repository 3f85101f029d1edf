// libFuzzer target: the library's .npy reader (core/src/npy.cpp) on arbitrary
// bytes. Every input must load or throw strata::Error; anything else (a
// crash, a sanitizer report, another exception type) is a finding. A file
// that loads is written back with npy_bytes and must load again with the same
// shape, dtype and values.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/error.hpp"
#include "strata/npy.hpp"

namespace {

// One in-memory file for the whole run, rewritten per input; load_npy takes
// a path, and /proc/self/fd/N of a memfd is a regular file.
int file_fd() {
  static const int fd = ::memfd_create("strata-fuzz-npy", 0);
  if (fd < 0) std::abort();
  return fd;
}

std::string file_path() { return "/proc/self/fd/" + std::to_string(file_fd()); }

void put(const std::uint8_t* data, std::size_t size) {
  const int fd = file_fd();
  if (::ftruncate(fd, 0) != 0) std::abort();
  std::size_t done = 0;
  while (done < size) {
    const ssize_t w = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (w <= 0) std::abort();
    done += static_cast<std::size_t>(w);
  }
}

bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  put(data, size);
  strata::Tensor t;
  try {
    t = strata::load_npy(file_path());
  } catch (const strata::Error&) {
    return 0;  // refused with a message: fine
  }
  // Loaded: every element is readable (ASan checks the view against the
  // buffer) and the round trip through the writer is exact.
  if (t.numel() > (1 << 20)) return 0;
  const std::vector<double> values = t.to_vector<double>();
  const std::string bytes = strata::npy_bytes(t);
  put(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  const strata::Tensor back = strata::load_npy(file_path());
  if (back.shape() != t.shape() || back.dtype() != t.dtype() ||
      !same_values(back.to_vector<double>(), values))
    std::abort();
  return 0;
}
