#pragma once
// Training a DecoderLM on a token stream: the data (byte tokenizer over text,
// or ids from a .npy file), the order of the sequences, the step (micro-
// batches with gradient accumulation, clipping, the schedule, the
// optimizer), validation on a held-out tail, and checkpoints that a process
// killed mid-save cannot corrupt and that resume bit-identically. What
// `strata train` runs. docs/guide/training.md, "`strata train`".
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "strata/nn/decoder.hpp"
#include "strata/nn/optim.hpp"

namespace strata::nn {

// ---- data (train_data.cpp) ---------------------------------------------------

// A token stream. `path` is a .npy file (int32, int64 or uint16 ids, any
// shape, read flat in C order), a text file (one token per byte) or a folder
// whose *.txt files (sorted by name, not recursive) are concatenated, each
// followed by a newline byte when it does not end in one. A missing path, an
// empty stream, a folder without .txt files, a negative id or one past 2^31
// is a strata::Error naming the path.
struct TokenData {
  std::string path;
  std::vector<std::int32_t> ids;
  // FNV-1a over the ids' little-endian bytes: what a checkpoint records, so
  // that a resume on other data is refused.
  std::uint64_t hash() const;
};
TokenData load_tokens(const std::string& path);

enum class DataOrder { sequential, shuffled };

// Where each training sequence starts in a stream of n tokens (the training
// part: the validation tail excluded). A sequence is the T + 1 tokens from
// its offset (inputs its first T, targets its last T). Sequences are counted
// across micro-batches in order: row b of micro-batch j of step s is
// i = (s * K + j) * B + b.
//   sequential: offset(i) = (i * T) mod (n - T - 1), exactly (another
//     program reproduces it from this line).
//   shuffled: epoch e = i / W, W = max(1, (n - T) / T), visits W windows
//     at phase_e + k * T (k in 0..W-1) in the order of a Fisher-Yates
//     shuffle of 0..W-1, all drawn from std::mt19937_64 seeded with
//     splitmix64(seed + e): the first draw gives phase_e, below
//     min(T, n - W * T) (so the windows start at every alignment over the
//     epochs, not only at multiples of T), the next ones the shuffle (an
//     index below m from one draw x is x mod m, for every platform alike);
//     offset(i) = phase_e + perm_e[i mod W] * T.
// n < T + 2 is a strata::Error (the data is shorter than one sequence).
class BatchOrder {
 public:
  BatchOrder(std::int64_t n, std::int64_t seq_len, DataOrder order, std::uint64_t seed);
  std::int64_t offset(std::int64_t i) const;

 private:
  std::int64_t n_, t_;
  DataOrder order_;
  std::uint64_t seed_;
  mutable std::int64_t epoch_ = -1;  // the cached permutation's epoch
  mutable std::int64_t phase_ = 0;   // and its phase
  mutable std::vector<std::int64_t> perm_;
};

// ---- the trainer (train_loop.cpp) ----------------------------------------------

struct TrainOptions {
  std::int64_t seq_len = 0;  // T
  std::int64_t batch = 0;    // B: sequences per micro-batch
  std::int64_t accum = 1;    // K: micro-batches per step
  std::int64_t steps = 0;    // the total; the cosine schedule ends here
  LrSchedule::Kind schedule = LrSchedule::Kind::constant;
  double lr = 1e-3;
  double min_lr = 0.0;
  std::int64_t warmup = 0;
  double weight_decay = 0.1;
  double clip = 1.0;                // global-norm clipping; 0: off
  std::string optimizer = "adamw";  // adamw (betas 0.9 / 0.95, eps 1e-8) or sgd
  // The model's parameters' dtype: f32 (f32 end to end) or bf16 (bf16
  // compute, f32 master weights and optimizer state: mixed precision).
  DType dtype = DType::f32;
  double momentum = 0.0;  // sgd only
  bool nesterov = false;  // sgd only; needs momentum > 0
  DataOrder order = DataOrder::sequential;
  std::uint64_t seed = 0;        // the shuffled order's (and, in the CLI, the init's)
  double val_fraction = 0.0;     // the held-out tail, a fraction of the tokens
  std::int64_t val_every = 0;    // steps between validations; 0: none
  std::int64_t val_batches = 8;  // at most this many batches of B per validation
};

// One line of the log.
struct StepStats {
  std::int64_t step = 0;  // 1-based: the number of steps done
  double loss = 0;        // mean over the step's micro-batches
  double val_loss = 0;    // NaN when not validated at this step
  double lr = 0;
  double grad_norm = 0;  // before clipping
  double tokens_per_s = 0;
};

// Options are checked on construction (a non-positive size, steps, lr; a
// fraction outside [0, 1); an unknown optimizer; sequences longer than the
// model's context; ids past its vocabulary; a training part shorter than
// T + 2 tokens or, when validating, a validation tail shorter than T + 1) as
// a strata::Error naming the option and its value, before any step.
class Trainer {
 public:
  Trainer(DecoderLM& model, const TokenData& data, const TrainOptions& opt);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One step: K micro-batches (loss = mean cross entropy, each scaled by
  // 1/K into the accumulated gradients), clipping, the optimizer at the
  // schedule's rate. A non-finite loss or gradient norm is a strata::Error
  // "step N: ..." and the model is left as the step found it except for
  // its gradients.
  StepStats step();
  // Mean loss over the validation tail's windows (non-overlapping, from its
  // start, at most val_batches batches of B), without a tape.
  double validate();
  std::int64_t steps_done() const { return step_; }
  const TrainOptions& options() const { return opt_; }
  DecoderLM& model() { return *model_; }
  Optimizer& optimizer() { return *optim_; }
  std::int64_t train_tokens() const { return n_train_; }
  std::int64_t val_tokens() const {
    return static_cast<std::int64_t>(data_->ids.size()) - n_train_;
  }
  const TokenData& data() const { return *data_; }
  // Continues from a checkpoint's counters (load_checkpoint sets them).
  void set_steps_done(std::int64_t s) { step_ = s; }

 private:
  Tensor micro_batch_loss(std::int64_t first_sequence, bool train);
  // The mean of `count` micro-batches' losses from first, first + stride, ...
  double mean_loss(std::int64_t first, std::int64_t count, std::int64_t stride, bool train);
  OpOptions op_options() const;
  DecoderLM* model_;
  const TokenData* data_;
  TrainOptions opt_;
  std::int64_t n_train_ = 0;
  std::int64_t step_ = 0;
  std::unique_ptr<BatchOrder> order_;
  std::unique_ptr<Optimizer> optim_;
};

// ---- checkpoints (train_checkpoint.cpp) ------------------------------------------

// A checkpoint is a folder:
//   config.json, model.safetensors  the model in the Hugging Face layout
//                                   (what load_model, `strata generate` and
//                                   transformers read)
//   optimizer.safetensors           the optimizer's NamedState
//   trainer_state.json              step, sequences seen, the data's path,
//                                   length and hash, the options (the
//                                   shuffled order's RNG is its seed), the
//                                   last losses
// save_checkpoint writes it whole or not at all: every file goes into the
// sibling folder `dir`.tmp, each flushed to disk, the folder flushed, then
// that folder is swapped with `dir` in one rename (renameat2 RENAME_EXCHANGE;
// where the file system lacks it, `dir` is first renamed to `dir`.old) and
// the previous checkpoint removed. A process killed at any point leaves
// `dir` holding the previous checkpoint or the new one, never a mixture;
// leftovers are cleared by the next save, and a `dir` lost between the two
// fallback renames is found again at `dir`.old by load_checkpoint.
void save_checkpoint(const std::string& dir, Trainer& t, const StepStats& last);

struct CheckpointInfo {
  std::string dir;  // where it was read from
  ModelConfig config;
  TrainOptions options;
  std::int64_t step = 0;
  std::string data_path;
  std::int64_t data_tokens = 0;
  std::uint64_t data_hash = 0;
  double loss = 0;
};
// The checkpoint at `dir` (or `dir`.old, see above): its config and state,
// checked (a missing file, a malformed trainer_state.json) as a strata::Error
// naming the file.
CheckpointInfo read_checkpoint(const std::string& dir);
bool is_checkpoint(const std::string& dir);
// Loads the model's weights and the optimizer's state into a trainer made
// with the checkpoint's options over the same data (its length and hash
// checked), and its step counter, so that the next step() is the one the
// saved run would have taken.
void load_checkpoint(const CheckpointInfo& info, Trainer& t);

}  // namespace strata::nn
