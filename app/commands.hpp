#pragma once
// The subcommands of the strata tool. Each add_* wires its options into
// `root` and a callback that stores the command's exit status in `status`;
// errors are thrown as strata::Error and reported by main() as one line.
#include <CLI/CLI.hpp>

#include "strata/error.hpp"

namespace strata::cli {

// Exit statuses shared by every subcommand (documented in docs/guide/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;     // bad input, I/O, unavailable backend
inline constexpr int kExitUsage = 2;     // the command line itself is wrong
inline constexpr int kExitMismatch = 3;  // a backend disagreed with the reference

// A command line that makes no sense (exit status kExitUsage).
struct UsageError : Error {
  using Error::Error;
};

void add_info_command(CLI::App& root, int& status);
void add_attention_command(CLI::App& root, int& status);
void add_check_command(CLI::App& root, int& status);
void add_forward_command(CLI::App& root, int& status);   // models: logits for ids
void add_generate_command(CLI::App& root, int& status);  // models: text generation
void add_train_command(CLI::App& root, int& status);     // models: training

}  // namespace strata::cli
