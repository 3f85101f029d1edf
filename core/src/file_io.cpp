#include "strata/detail/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "strata/error.hpp"

namespace strata::detail {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::vector<std::uint8_t> read_file_bytes(const std::string& path, const char* op) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(op, "cannot open '", path, "': ", errno_text());
  std::vector<std::uint8_t> bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    fail(op, "cannot read '", path, "': is a directory");
  }
  // Regular files announce their size; pipes and the like are read to EOF.
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<std::size_t>(st.st_size));
  std::uint8_t chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = errno_text();
      ::close(fd);
      fail(op, "cannot read '", path, "': ", why);
    }
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  ::close(fd);
  return bytes;
}

ReplacingFile::ReplacingFile(const std::string& path, const char* op)
    : path_(path), target_(path), op_(op) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) fail_errno("cannot access");
  if (exists && S_ISDIR(st.st_mode)) fail(op_, "cannot write '", path_, "': is a directory");
  if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd_ < 0) fail_errno("cannot open");
    return;
  }
  if (exists && !S_ISREG(st.st_mode))
    fail(op_, "cannot write '", path_, "': not a regular file, character device or FIFO");
  if (exists) {
    // Replace the file a symlink names, not the link.
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) fail_errno("cannot resolve");
    target_ = real;
    std::free(real);
  }
  temp_ = dir_of(target_) + "/.strata-tmp-XXXXXX";
  fd_ = ::mkstemp(temp_.data());
  if (fd_ < 0) {
    temp_.clear();
    fail_errno("cannot create a temporary file next to");
  }
  // mkstemp makes 0600; keep an existing file's mode, else 0666 & ~umask.
  mode_t mode = st.st_mode & 07777;
  if (!exists) {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd_, mode) != 0) {
    // The destructor does not run for a constructor that throws.
    const std::string why = errno_text();
    ::close(fd_);
    ::unlink(temp_.c_str());
    fail(op_, "cannot set the mode of a temporary file for '", path_, "': ", why);
  }
}

ReplacingFile::~ReplacingFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void ReplacingFile::fail_errno(const std::string& what) {
  const std::string why = errno_text();
  fail(op_, what, " '", path_, "': ", why);
}

void ReplacingFile::write(const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      fail_errno("cannot write");
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void ReplacingFile::commit() {
  if (temp_.empty()) {  // written in place
    if (::close(fd_) != 0) {
      fd_ = -1;
      fail_errno("cannot write");
    }
    fd_ = -1;
    return;
  }
  // On disk before the rename, so a crash leaves the old file or the new one.
  if (::fsync(fd_) != 0) fail_errno("cannot flush");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) fail_errno("cannot write");
  if (::rename(temp_.c_str(), target_.c_str()) != 0) fail_errno("cannot replace");
  temp_.clear();
}

}  // namespace strata::detail
