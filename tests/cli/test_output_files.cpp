// Output targets of the CLI (app/output_files.cpp) behave like np.save's:
// same-file outputs and outputs that are inputs are refused by identity, not
// spelling; symlinks are written through; character devices and FIFOs are
// written in place; regular files are replaced atomically keeping their mode;
// unwritable targets are refused.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli/temp_dir.hpp"
#include "commands.hpp"
#include "output_files.hpp"

namespace fs = std::filesystem;
using strata::cli::NamedPath;

namespace {

using strata::cli::test::TempDir;

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string error_of(const std::vector<NamedPath>& outs, const std::vector<NamedPath>& ins) {
  try {
    strata::cli::check_outputs(outs, ins);
  } catch (const strata::cli::UsageError& e) {
    return std::string("usage: ") + e.what();
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

bool no_temporaries(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind(".strata-tmp", 0) == 0) return false;
  return true;
}

}  // namespace

TEST_CASE("outputs: the same file under two spellings is refused", "[cli][output]") {
  TempDir dir;
  const std::string x = dir.file("x.npy"), dotx = (dir.path / "." / "x.npy").string();
  const std::string sub = dir.file("sub");
  fs::create_directories(sub);
  const std::string up = (dir.path / "sub" / ".." / "x.npy").string();

  SECTION("neither exists yet: same directory and name") {
    CHECK(error_of({{x, "--out"}, {dotx, "--lse"}}, {}).rfind("usage: ", 0) == 0);
    CHECK(error_of({{x, "--out"}, {up, "--lse"}}, {}).find("same file") != std::string::npos);
    CHECK(error_of({{x, "--out"}, {dir.file("y.npy"), "--lse"}}, {}).empty());
  }
  SECTION("both exist, through a symlink and a hard link") {
    write(x, "old");
    fs::create_symlink(x, dir.file("link.npy"));
    fs::create_hard_link(x, dir.file("hard.npy"));
    CHECK(error_of({{x, "--out"}, {dir.file("link.npy"), "--lse"}}, {}).find("same file") !=
          std::string::npos);
    CHECK(error_of({{dir.file("hard.npy"), "--out"}, {dotx, "--lse"}}, {}).find("same file") !=
          std::string::npos);
  }
  SECTION("an output that is an input") {
    write(x, "input");
    fs::create_symlink(x, dir.file("link.npy"));
    const std::vector<NamedPath> ins{{dir.file("k.npy"), "--k"}, {dotx, "--q"}};
    const std::string e = error_of({{dir.file("link.npy"), "--out"}}, ins);
    CHECK(e.rfind("usage: ", 0) == 0);
    CHECK(e.find("--q") != std::string::npos);
    CHECK(error_of({{dir.file("o.npy"), "--out"}, {x, "--lse"}}, ins).find("input --q") !=
          std::string::npos);
    CHECK(slurp(x) == "input");
    CHECK(error_of({{dir.file("o.npy"), "--out"}}, ins).empty());
  }
}

TEST_CASE("outputs: a symlink is written through, the link stays", "[cli][output]") {
  TempDir dir;
  const std::string target = dir.file("target.npy"), link = dir.file("link.npy");
  write(target, "old");
  fs::create_symlink("target.npy", link);  // relative, as `ln -s` makes them
  strata::cli::check_outputs({{link, "--out"}}, {});
  strata::cli::write_outputs({{{link, "--out"}, "new data"}});
  CHECK(fs::is_symlink(link));
  CHECK(fs::read_symlink(link) == "target.npy");
  CHECK(slurp(target) == "new data");

  // A dangling link: np.save creates the file it names.
  const std::string dangling = dir.file("dangling.npy");
  fs::create_symlink("made.npy", dangling);
  strata::cli::check_outputs({{dangling, "--lse"}}, {});
  strata::cli::write_outputs({{{dangling, "--lse"}, "lse"}});
  CHECK(fs::is_symlink(dangling));
  CHECK(slurp(dir.file("made.npy")) == "lse");
  CHECK(no_temporaries(dir.path));
}

TEST_CASE("outputs: a regular file is replaced keeping its mode; unwritable targets refused",
          "[cli][output]") {
  TempDir dir;
  const std::string f = dir.file("out.npy");
  write(f, "old");
  REQUIRE(::chmod(f.c_str(), 0640) == 0);
  strata::cli::write_outputs({{{f, "--out"}, "new"}});
  CHECK(slurp(f) == "new");
  struct stat st {};
  REQUIRE(::stat(f.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);

  CHECK(error_of({{dir.path.string(), "--out"}}, {}).find("is a directory") != std::string::npos);
  CHECK(error_of({{dir.file("no/such/o.npy"), "--out"}}, {}).find("does not exist") !=
        std::string::npos);
  if (::geteuid() != 0) {  // root may write anything; test_cli_attention.py covers it as nobody
    REQUIRE(::chmod(f.c_str(), 0444) == 0);
    CHECK(error_of({{f, "--out"}}, {}).find("not writable") != std::string::npos);
    REQUIRE(::chmod(dir.path.c_str(), 0555) == 0);
    CHECK(error_of({{dir.file("new.npy"), "--out"}}, {}).find("not writable") != std::string::npos);
    REQUIRE(::chmod(dir.path.c_str(), 0755) == 0);
  } else {
    WARN("running as root: unwritable targets are checked by test_cli_attention.py as nobody");
  }
}

TEST_CASE("outputs: a FIFO is written in place, never replaced", "[cli][output]") {
  TempDir dir;
  const std::string fifo = dir.file("pipe.npy"), other = dir.file("other.npy");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The reader end is opened (non-blocking) before the write, so the
  // writer's open does not wait, and a broken writer that replaces the FIFO
  // cannot hang the test. The bytes fit the pipe's buffer.
  const int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(rfd >= 0);
  strata::cli::check_outputs({{fifo, "--out"}, {other, "--lse"}}, {});
  strata::cli::write_outputs({{{fifo, "--out"}, "through the pipe"}, {{other, "--lse"}, "lse"}});
  std::string got;
  char buf[256];
  ssize_t n;
  while ((n = ::read(rfd, buf, sizeof buf)) > 0) got.append(buf, static_cast<std::size_t>(n));
  ::close(rfd);
  CHECK(got == "through the pipe");
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  CHECK(slurp(other) == "lse");
  CHECK(no_temporaries(dir.path));
}

TEST_CASE("outputs: a character device is written in place, never replaced", "[cli][output]") {
  if (::geteuid() != 0) {
    WARN("skipped: creating a device node needs root");
    return;
  }
  TempDir dir;
  // Our own nodes for /dev/null (1, 3) and /dev/full (1, 7): a broken writer
  // would replace these, not the machine's.
  const std::string null_node = dir.file("null"), full_node = dir.file("full");
  REQUIRE(::mknod(null_node.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
  REQUIRE(::mknod(full_node.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);
  const int probe = ::open(null_node.c_str(), O_WRONLY);
  if (probe < 0) {
    WARN("skipped: device nodes cannot be opened here (nodev mount?)");
    return;
  }
  ::close(probe);
  auto is_chr = [](const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
  };

  strata::cli::check_outputs({{null_node, "--out"}}, {});
  strata::cli::write_outputs({{{null_node, "--out"}, "discarded"}});
  CHECK(is_chr(null_node));

  // /dev/full fails with ENOSPC: a clear error, the node stays, and the
  // regular output of the same run is not created (all or nothing).
  const std::string lse = dir.file("lse.npy");
  std::string err;
  try {
    strata::cli::write_outputs({{{lse, "--lse"}, "lse"}, {{full_node, "--out"}, "data"}});
  } catch (const strata::Error& e) {
    err = e.what();
  }
  CHECK(err.find("--out '" + full_node + "'") != std::string::npos);
  CHECK(err.find("No space left on device") != std::string::npos);
  CHECK(is_chr(full_node));
  CHECK_FALSE(fs::exists(lse));
  CHECK(no_temporaries(dir.path));
}

TEST_CASE("outputs: several files are written all or nothing", "[cli][output]") {
  TempDir dir;
  const std::string out = dir.file("out.npy");
  write(out, "precious");
  const std::string missing_dir = dir.file("no/such/dir/lse.npy");
  CHECK_THROWS_AS(
      strata::cli::write_outputs({{{out, "--out"}, "new"}, {{missing_dir, "--lse"}, "x"}}),
      strata::Error);
  CHECK(slurp(out) == "precious");
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK(entry.path().filename().string().rfind(".strata-tmp", 0) != 0);

  strata::cli::write_outputs({{{out, "--out"}, "new"}, {{dir.file("lse.npy"), "--lse"}, "lse"}});
  CHECK(slurp(out) == "new");
  CHECK(slurp(dir.file("lse.npy")) == "lse");
  CHECK_THROWS_AS(strata::cli::check_outputs({{missing_dir, "--lse"}}, {}), strata::Error);
  CHECK_THROWS_AS(strata::cli::check_outputs({{dir.path.string(), "--out"}}, {}), strata::Error);
  CHECK_NOTHROW(strata::cli::check_outputs({{out, "--out"}}, {}));
}
