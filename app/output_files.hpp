#pragma once
// Where `strata attention` writes its results, with np.save's behaviour on
// the targets (docs/guide/cli-attention.md, "`strata attention` on your arrays"):
//   - a symlink is written through: the link stays, its target gets the data;
//   - a character device or FIFO is opened and written directly, never
//     replaced (`--out /dev/null`, `--out /dev/stdout`, a named pipe);
//   - a regular file (new or existing) is written to a temporary file in its
//     own directory and renamed over it once every output is complete, so a
//     failing run changes nothing; an existing file keeps its permission bits
//     (and, where the process may, its owner);
//   - an output that is the same file as another output or as an input
//     (same st_dev and st_ino, however spelled) is refused before anything
//     runs; so is a target the user may not write.
#include <string>
#include <utility>
#include <vector>

#include "strata/npy.hpp"

namespace strata::cli {

// How the tool writes .npy results (strata/npy.hpp): bf16 as float32, since
// NumPy has no bfloat16; summaries name the written dtype (npy_dtype).
inline constexpr NpyWriteOptions kNpyOut{.bf16_as_f32 = true};

// A file named on the command line, with the option that named it ("--out").
struct NamedPath {
  std::string path;
  std::string what;
};

// Checks, before any work, that every output can be written where it points
// and clashes with no other output and no input. Throws UsageError (exit 2)
// for an output that is another output or an input, strata::Error otherwise
// (missing or unwritable directory, unwritable file, a directory, a socket
// or block device). Inputs that cannot be stat'ed are skipped: loading them
// reports that.
void check_outputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs);

// Writes every (target, bytes) pair, all or nothing as far as the filesystem
// allows: regular targets go to temporaries first; then character devices and
// FIFOs are written in place; only when all of that succeeded are the
// temporaries renamed over their targets. On failure the temporaries are
// removed and no regular target is created or changed.
void write_outputs(const std::vector<std::pair<NamedPath, std::string>>& files);

}  // namespace strata::cli
