#include "train_options.hpp"

#include <unistd.h>

#include <filesystem>
#include <set>

#include "table.hpp"  // fmt

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

// The nearest folder that exists at or above `p`: where a new folder would be made.
fs::path existing_ancestor(fs::path p) {
  std::error_code ec;
  p = fs::absolute(p, ec);
  while (!p.empty() && !fs::exists(p, ec) && p != p.root_path()) p = p.parent_path();
  return p;
}

}  // namespace

void add_train_options(CLI::App* cmd, TrainCli& c) {
  c.cmd = cmd;
  nn::TrainOptions& t = c.train;
  const char* m = "Model";
  cmd->add_option("--config", c.config, "config.json of a new model (weights drawn with --seed)")
      ->group(m);
  cmd->add_option("--init", c.init,
                  "start from these weights (model.safetensors; its config: --config or the "
                  "config.json beside it)")
      ->group(m);
  cmd->add_option("--backend", c.backend, "auto, reference, cpu or cuda")->group(m);
  cmd->add_option("--dtype", c.dtype,
                  "f32 (end to end) or bf16 (bf16 weights, activations and gradients; f32 master "
                  "weights and optimizer state)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->group(m);
  const char* d = "Data";
  cmd->add_option("--data", c.data,
                  "a text file, a folder of .txt files (bytes are tokens) or a .npy of token ids "
                  "(int32, int64, uint16)")
      ->group(d);
  cmd->add_option("--seq-len", t.seq_len, "T: tokens per sequence")->group(d);
  cmd->add_option("--batch", t.batch, "B: sequences per micro-batch")->group(d);
  cmd->add_option("--accum", t.accum, "K: micro-batches per step (default 1)")->group(d);
  cmd->add_option("--order", c.order,
                  "sequential (default: sequence i from token (i*T) mod (n-T-1)) or shuffled")
      ->check(CLI::IsMember({"sequential", "shuffled"}))
      ->group(d);
  cmd->add_option("--seed", t.seed, "seed of the shuffled order and of a new model's weights")
      ->group(d);
  cmd->add_option("--val-fraction", t.val_fraction,
                  "hold out this tail fraction of the tokens for validation (default 0)")
      ->group(d);
  cmd->add_option("--val-every", t.val_every,
                  "validate every N steps (0: at the end only when --val-fraction > 0)")
      ->group(d);
  const char* o = "Optimization";
  cmd->add_option("--steps", t.steps, "S: optimizer steps in all")->group(o);
  cmd->add_option("--lr", t.lr, "peak learning rate")->group(o);
  cmd->add_option("--warmup", t.warmup, "steps of linear warm-up (default 0)")->group(o);
  cmd->add_option("--schedule", c.schedule, "constant (default) or cosine (to --min-lr at --steps)")
      ->check(CLI::IsMember({"constant", "cosine"}))
      ->group(o);
  cmd->add_option("--min-lr", t.min_lr, "the cosine schedule's final rate (default 0)")->group(o);
  cmd->add_option("--weight-decay", t.weight_decay,
                  "decoupled (adamw) or L2 (sgd) decay of matrices (default 0.1)")
      ->group(o);
  cmd->add_option("--clip", t.clip, "clip the gradients' global norm to this (default 1; 0: off)")
      ->group(o);
  cmd->add_option("--optimizer", t.optimizer, "adamw (default; betas 0.9, 0.95, eps 1e-8) or sgd")
      ->check(CLI::IsMember({"adamw", "sgd"}))
      ->group(o);
  cmd->add_option("--momentum", t.momentum, "sgd's momentum (default 0)")->group(o);
  cmd->add_flag("--nesterov", t.nesterov, "sgd: Nesterov momentum (needs --momentum > 0)")
      ->group(o);
  const char* w = "Output";
  cmd->add_option("--out", c.out, "the out folder: checkpoint/ and train_log.csv")->group(w);
  cmd->add_option("--save-every", c.save_every,
                  "save a checkpoint every N steps (default 0: at the end only)")
      ->group(w);
  cmd->add_option("--resume", c.resume,
                  "continue the checkpoint in this folder (an out folder or a checkpoint)")
      ->group(w);
  cmd->add_option("--stop-at", c.stop_at,
                  "stop after this step, with a checkpoint, as if interrupted (--resume goes on)")
      ->group(w);
}

std::string checkpoint_to_resume(const std::string& resume) {
  const std::string inner = (fs::path(resume) / kCheckpointName).string();
  return nn::is_checkpoint(inner) ? inner : resume;
}

void check_out_folder(const std::string& out, const std::string& resumed) {
  std::error_code ec;
  const fs::file_status st = fs::status(out, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw Error("--out '" + out + "': exists and is not a folder");
  const fs::path probe = fs::exists(st) ? fs::path(out) : existing_ancestor(out);
  if (!fs::is_directory(probe, ec) || ::access(probe.c_str(), W_OK | X_OK) != 0)
    throw Error("--out '" + out + "': cannot write in '" + probe.string() + "'");
  if (!fs::exists(st)) return;
  const std::string cp = (fs::path(out) / kCheckpointName).string();
  const std::set<std::string> ours = {kCheckpointName, std::string(kCheckpointName) + ".tmp",
                                      std::string(kCheckpointName) + ".old", kLogName,
                                      "train_log.png"};
  for (const fs::directory_entry& e : fs::directory_iterator(out, ec)) {
    const std::string name = e.path().filename().string();
    if (ours.count(name) == 0)
      throw Error("--out '" + out + "': holds '" + name +
                  "', which strata train did not write; choose a new or empty folder");
  }
  if (nn::is_checkpoint(cp)) {
    std::error_code e1, e2;
    const bool same = !resumed.empty() && fs::equivalent(fs::path(resumed), fs::path(cp), e1);
    const bool same_old =
        !resumed.empty() && fs::equivalent(fs::path(resumed), fs::path(cp + ".old"), e2);
    if (!same && !same_old)
      throw Error("--out '" + out + "': holds a checkpoint (step " +
                  std::to_string(nn::read_checkpoint(cp).step) + "); continue it with --resume '" +
                  out + "' or choose another folder");
  }
}

nn::TrainOptions merge_resumed(const TrainCli& c, const nn::CheckpointInfo& info) {
  nn::TrainOptions r = info.options;
  const nn::TrainOptions& t = c.train;
  std::string clash;
  const auto same = [&](const char* flag, bool equal, const std::string& saved) {
    if (c.given(flag) && !equal)
      clash += std::string(clash.empty() ? "" : ", ") + flag + " (saved: " + saved + ")";
  };
  same("--seq-len", t.seq_len == r.seq_len, std::to_string(r.seq_len));
  same("--batch", t.batch == r.batch, std::to_string(r.batch));
  same("--accum", t.accum == r.accum, std::to_string(r.accum));
  same("--lr", t.lr == r.lr, fmt("%g", r.lr));
  same("--min-lr", t.min_lr == r.min_lr, fmt("%g", r.min_lr));
  same("--warmup", t.warmup == r.warmup, std::to_string(r.warmup));
  same("--weight-decay", t.weight_decay == r.weight_decay, fmt("%g", r.weight_decay));
  same("--clip", t.clip == r.clip, fmt("%g", r.clip));
  same("--optimizer", t.optimizer == r.optimizer, r.optimizer);
  same("--dtype", c.dtype == dtype_name(r.dtype), std::string(dtype_name(r.dtype)));
  same("--momentum", t.momentum == r.momentum, fmt("%g", r.momentum));
  same("--nesterov", t.nesterov == r.nesterov, r.nesterov ? "on" : "off");
  same("--seed", t.seed == r.seed, std::to_string(r.seed));
  same("--val-fraction", t.val_fraction == r.val_fraction, fmt("%g", r.val_fraction));
  const bool cosine = r.schedule == nn::LrSchedule::Kind::cosine;
  same("--schedule", (c.schedule == "cosine") == cosine, cosine ? "cosine" : "constant");
  const bool seq = r.order == nn::DataOrder::sequential;
  same("--order", (c.order == "sequential") == seq, seq ? "sequential" : "shuffled");
  if (!clash.empty())
    throw UsageError("--resume '" + c.resume + "': given other values than the checkpoint's: " +
                     clash + "; a resumed run keeps its options");
  if (c.given("--steps")) {
    if (t.steps <= info.step)
      throw UsageError("--steps " + std::to_string(t.steps) + ": the checkpoint is at step " +
                       std::to_string(info.step) + " already");
    r.steps = t.steps;
  }
  if (c.given("--val-every")) r.val_every = t.val_every;
  return r;
}

}  // namespace strata::cli
