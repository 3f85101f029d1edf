#include "output_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "commands.hpp"
#include "strata/error.hpp"

namespace strata::cli {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string where_of(const NamedPath& p) { return p.what + " '" + p.path + "'"; }

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// What an output path leads to once symlinks are followed.
struct Target {
  enum Kind { missing, regular, special } kind = missing;
  // regular: the canonical path of the file (its directory gets the
  // temporary); missing: the name that will be created (the end of a
  // dangling symlink chain, or the path itself); special: the path as given.
  std::string final_path;
  struct stat st {};  // of the existing file (regular, special)
};

Target classify(const NamedPath& np) {
  const std::string where = where_of(np);
  Target t;
  if (::stat(np.path.c_str(), &t.st) == 0) {
    if (S_ISDIR(t.st.st_mode)) throw Error(where + ": is a directory");
    if (S_ISCHR(t.st.st_mode) || S_ISFIFO(t.st.st_mode)) {
      t.kind = Target::special;
      t.final_path = np.path;  // /proc/self/fd/N links only resolve through open()
      return t;
    }
    if (!S_ISREG(t.st.st_mode))
      throw Error(where +
                  ": is a socket or block device (strata writes regular files, character "
                  "devices and FIFOs)");
    char* real = ::realpath(np.path.c_str(), nullptr);
    if (real == nullptr) throw Error(where + ": cannot resolve (" + errno_text() + ")");
    t.kind = Target::regular;
    t.final_path = real;
    std::free(real);
    return t;
  }
  if (errno != ENOENT) throw Error(where + ": cannot access (" + errno_text() + ")");
  // Nothing there, or a dangling symlink (chain): np.save creates the file the
  // last link names, so follow the links by hand to that name.
  std::string p = np.path;
  for (int hop = 0; hop < 40; ++hop) {
    struct stat lst {};
    if (::lstat(p.c_str(), &lst) != 0) {
      if (errno != ENOENT) throw Error(where + ": cannot access (" + errno_text() + ")");
      t.kind = Target::missing;
      t.final_path = p;
      return t;
    }
    if (!S_ISLNK(lst.st_mode)) throw Error(where + ": changed while being checked");
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf);
    if (n < 0 || static_cast<std::size_t>(n) >= sizeof buf)
      throw Error(where + ": cannot read the symbolic link '" + p + "'");
    const std::string link(buf, static_cast<std::size_t>(n));
    p = link.front() == '/' ? link : dir_of(p) + "/" + link;
  }
  throw Error(where + ": too many levels of symbolic links");
}

// A file's identity: (st_dev, st_ino) of an existing file; for one not yet
// created, its directory's (st_dev, st_ino) and its name, so './x' and 'x'
// are the same output even before either exists.
struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;
  bool operator==(const Identity&) const = default;
};

Identity identity(const Target& t, const std::string& where) {
  if (t.kind != Target::missing) return {t.st.st_dev, t.st.st_ino, ""};
  const std::string dir = dir_of(t.final_path);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode))
    throw Error(where + ": directory '" + dir + "' does not exist");
  return {ds.st_dev, ds.st_ino, base_of(t.final_path)};
}

void check_writable(const Target& t, const std::string& where) {
  const std::string dir = dir_of(t.final_path);
  if (t.kind != Target::missing && ::access(t.final_path.c_str(), W_OK) != 0)
    throw Error(where + ": not writable (" + errno_text() + ")");
  if (t.kind == Target::missing && ::access(dir.c_str(), W_OK) != 0)
    throw Error(where + ": directory '" + dir + "' is not writable (" + errno_text() + ")");
  if (t.kind == Target::regular && ::access(dir.c_str(), W_OK) != 0)
    throw Error(where + ": directory '" + dir +
                "' is not writable (strata replaces a file through a temporary file next to "
                "it): " +
                errno_text());
}

// Writes all of `bytes` to fd; false (errno set) on failure.
bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) {
      errno = EIO;
      return false;
    }
    done += static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  std::vector<Identity> seen;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string where = where_of(outputs[i]);
    const Target t = classify(outputs[i]);
    const Identity id = identity(t, where);
    for (std::size_t j = 0; j < i; ++j)
      if (seen[j] == id)
        throw UsageError(where + " and " + where_of(outputs[j]) + " are the same file");
    seen.push_back(id);
    if (t.kind != Target::missing) {
      for (const NamedPath& in : inputs) {
        struct stat st {};
        if (::stat(in.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (st.st_dev == t.st.st_dev && st.st_ino == t.st.st_ino)
          throw UsageError(where + " is the same file as the input " + where_of(in) +
                           " (strata does not overwrite its inputs)");
      }
    }
    check_writable(t, where);
  }
}

void write_outputs(const std::vector<std::pair<NamedPath, std::string>>& files) {
  struct Pending {
    std::string temp, final_path, where;
  };
  std::vector<Pending> temps;
  auto cleanup = [&temps] {
    for (const Pending& p : temps) ::unlink(p.temp.c_str());
  };
  auto fail = [&cleanup](const std::string& where, const std::string& why) {
    cleanup();
    throw Error(where + ": cannot write (" + why + ")");
  };
  // mkstemp creates files 0600; a new file gets the usual 0666 & ~umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);

  std::vector<std::size_t> specials;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [np, bytes] = files[i];
    const std::string where = where_of(np);
    Target t;
    try {
      t = classify(np);
    } catch (...) {
      cleanup();
      throw;
    }
    if (t.kind == Target::special) {
      specials.push_back(i);
      continue;
    }
    std::string tmpl = dir_of(t.final_path) + "/.strata-tmp-XXXXXX";
    const int fd = ::mkstemp(tmpl.data());
    if (fd < 0) fail(where, "cannot create a temporary file next to it: " + errno_text());
    temps.push_back({tmpl, t.final_path, where});
    bool ok = write_all(fd, bytes);
    if (ok && t.kind == Target::regular) {
      // Keep the replaced file's owner where we may (root), and its mode.
      if (t.st.st_uid != ::geteuid() || t.st.st_gid != ::getegid())
        if (::fchown(fd, t.st.st_uid, t.st.st_gid) != 0) errno = 0;  // best effort
      ok = ::fchmod(fd, t.st.st_mode & 07777) == 0;
    } else if (ok) {
      ok = ::fchmod(fd, 0666 & ~mask) == 0;
    }
    const std::string why = ok ? "" : errno_text();
    if (::close(fd) != 0 && ok) fail(where, errno_text());
    if (!ok) fail(where, why);
  }
  // Devices and FIFOs are written in place, as np.save does (a FIFO's open
  // waits for a reader); they cannot be rolled back, so they come after every
  // temporary is complete and before any rename.
  for (std::size_t i : specials) {
    const auto& [np, bytes] = files[i];
    const int fd = ::open(np.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) fail(where_of(np), errno_text());
    const bool ok = write_all(fd, bytes);
    const std::string why = ok ? "" : errno_text();
    if (::close(fd) != 0 && ok) fail(where_of(np), errno_text());
    if (!ok) fail(where_of(np), why);
  }
  for (std::size_t i = 0; i < temps.size(); ++i) {
    if (::rename(temps[i].temp.c_str(), temps[i].final_path.c_str()) != 0) {
      const std::string why = errno_text();
      temps.erase(temps.begin(), temps.begin() + static_cast<std::ptrdiff_t>(i));
      fail(temps.front().where, why);
    }
  }
}

}  // namespace strata::cli
