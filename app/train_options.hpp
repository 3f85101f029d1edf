#pragma once
// `strata train`'s command line (train_options.cpp) and the checks on its
// out folder, run before anything is loaded or written (docs/guide/cli.md).
#include <cstdint>
#include <string>

#include "commands.hpp"
#include "strata/nn/train.hpp"

namespace strata::cli {

struct TrainCli {
  std::string config;  // config.json: a fresh model (or --init's config)
  std::string init;    // W.safetensors: start from these weights
  std::string data;
  std::string out;
  std::string resume;
  std::string backend = "auto";
  std::string dtype = "f32";
  std::string schedule = "constant";
  std::string order = "sequential";
  std::int64_t save_every = 0;  // 0: at the end only
  std::int64_t stop_at = 0;     // 0: run to --steps
  nn::TrainOptions train;
  CLI::App* cmd = nullptr;  // to ask which options were given
  bool given(const char* flag) const { return cmd->count(flag) > 0; }
};

void add_train_options(CLI::App* cmd, TrainCli& cli);

// The out folder's names: the checkpoint folder, its save temporaries, the log.
inline constexpr const char* kCheckpointName = "checkpoint";
inline constexpr const char* kLogName = "train_log.csv";

// Refuses, as a strata::Error naming --out, an out folder that is a file,
// cannot be written, or holds anything `strata train` did not write; and one
// holding a checkpoint unless that checkpoint is the one resumed.
void check_out_folder(const std::string& out, const std::string& resumed_checkpoint);

// The checkpoint folder --resume names: DIR/checkpoint when DIR is an out
// folder, else DIR itself.
std::string checkpoint_to_resume(const std::string& resume);

// With --resume, the saved options replace the defaults; an option given on
// the command line that differs from the saved one is a UsageError (it would
// not continue the same run), except --steps (a new total past the saved
// step), --val-every and the options that do not change the maths.
nn::TrainOptions merge_resumed(const TrainCli& cli, const nn::CheckpointInfo& info);

}  // namespace strata::cli
