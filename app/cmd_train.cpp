// `strata train`: trains a model on a token stream, with progress on stderr,
// a CSV log and checkpoints in the out folder (docs/guide/cli.md,
// docs/guide/training.md, "`strata train`").
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "attention_cli.hpp"  // require_backend
#include "model_cli.hpp"
#include "strata/detail/file_io.hpp"
#include "strata/nn/hf_weights.hpp"
#include "table.hpp"  // fmt
#include "train_options.hpp"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

std::string csv_number(double v) {
  if (!std::isfinite(v)) return v != v ? "" : (v > 0 ? "inf" : "-inf");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

constexpr const char* kCsvHeader = "step,loss,val_loss,lr,grad_norm,tokens_per_s\n";

// The log's rows up to `step` (those a resumed run does not redo), as text.
std::string log_up_to(const std::string& path, std::int64_t step) {
  std::ifstream in(path);
  std::string text = kCsvHeader, line;
  if (!in || !std::getline(in, line)) return text;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (std::stoll(line.substr(0, line.find(','))) > step) break;
    text += line + "\n";
  }
  return text;
}

std::string duration(double s) {
  char buf[32];
  const auto t = static_cast<long long>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t / 60 % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  return buf;
}

// The model, its parameters in `dt`: from a checkpoint (weights loaded
// later with the optimizer), from --init's weights, or drawn from --seed for
// --config (drawn in f32, then rounded to dt).
nn::DecoderLM make_model(const TrainCli& c, const nn::ModelConfig* resumed, DType dt, Device dev) {
  if (resumed) return nn::DecoderLM(*resumed, dt, dev);
  if (!c.init.empty()) {
    const std::string config =
        !c.config.empty() ? c.config : (fs::path(c.init).parent_path() / "config.json").string();
    return nn::load_model(config, c.init, dt, dev);
  }
  nn::DecoderLM m(nn::load_config(c.config), DType::f32, Device::cpu());
  nn::init_normal(m, c.train.seed);
  m.to(dt);
  m.to(dev);
  return m;
}

void require_fresh_options(const TrainCli& c) {
  if (c.config.empty() && c.init.empty())
    throw UsageError("train: give --config (a new model), --init (its weights) or --resume");
  if (!c.config.empty() && !c.init.empty() && !fs::exists(c.init))
    throw Error("--init '" + c.init + "': no such file");
  for (const char* flag : {"--data", "--seq-len", "--batch", "--steps", "--lr", "--out"})
    if (!c.given(flag)) throw UsageError(std::string("train: ") + flag + " is required");
}

int run_train(TrainCli& c) {
  if (c.out.empty()) throw UsageError("train: --out is required");
  if (c.stop_at < 0) throw UsageError("--stop-at " + std::to_string(c.stop_at) + " must be >= 0");
  if (c.save_every < 0)
    throw UsageError("--save-every " + std::to_string(c.save_every) + " must be >= 0");
  nn::TrainOptions opt = c.train;
  opt.dtype = parse_dtype(c.dtype);
  opt.schedule =
      c.schedule == "cosine" ? nn::LrSchedule::Kind::cosine : nn::LrSchedule::Kind::constant;
  opt.order = c.order == "shuffled" ? nn::DataOrder::shuffled : nn::DataOrder::sequential;
  std::unique_ptr<nn::CheckpointInfo> info;
  std::string resumed;
  if (!c.resume.empty()) {
    resumed = checkpoint_to_resume(c.resume);
    info = std::make_unique<nn::CheckpointInfo>(nn::read_checkpoint(resumed));
    if (!c.config.empty() || !c.init.empty())
      throw UsageError("--resume: the checkpoint holds the model; drop --config and --init");
    opt = merge_resumed(c, *info);
  } else {
    require_fresh_options(c);
  }
  check_out_folder(c.out, info ? info->dir : "");
  const BackendInfo* b = require_backend(c.backend);
  const Device dev = b ? Device{b->device, 0} : Device::cpu();
  const nn::TokenData data = nn::load_tokens(c.data.empty() && info ? info->data_path : c.data);
  nn::DecoderLM model = make_model(c, info ? &info->config : nullptr, opt.dtype, dev);
  model.options().backend = c.backend;
  nn::Trainer trainer(model, data, opt);  // checks every option against the model and data
  if (info) nn::load_checkpoint(*info, trainer);
  const std::int64_t last = c.stop_at > 0 ? std::min(opt.steps, c.stop_at) : opt.steps;
  if (trainer.steps_done() >= last)
    throw UsageError("train: the checkpoint is at step " + std::to_string(trainer.steps_done()) +
                     ", nothing to do up to step " + std::to_string(last));

  // Everything checked: now the out folder is written.
  fs::create_directories(c.out);
  const std::string checkpoint = (fs::path(c.out) / kCheckpointName).string();
  const std::string log_path = (fs::path(c.out) / kLogName).string();
  {
    const std::string head = log_up_to(log_path, trainer.steps_done());
    detail::ReplacingFile f(log_path, "train");
    f.write(head.data(), head.size());
    f.commit();
  }
  std::ofstream log(log_path, std::ios::app);

  const bool tty = ::isatty(::fileno(stderr)) != 0;
  const bool validating = trainer.val_tokens() > 0;
  std::fprintf(stderr,
               "train: %lld parameters on %s; %lld training tokens (%lld held out) of '%s'; "
               "steps %lld..%lld of %lld, %lld tokens each\n",
               static_cast<long long>(model.num_parameters()), model_placement(model).c_str(),
               static_cast<long long>(trainer.train_tokens()),
               static_cast<long long>(trainer.val_tokens()), data.path.c_str(),
               static_cast<long long>(trainer.steps_done() + 1), static_cast<long long>(last),
               static_cast<long long>(opt.steps),
               static_cast<long long>(opt.batch * opt.accum * opt.seq_len));
  const std::int64_t first = trainer.steps_done();
  const std::int64_t every_line = std::max<std::int64_t>(1, (last - first) / 20);
  const auto start = std::chrono::steady_clock::now();
  nn::StepStats st;
  while (trainer.steps_done() < last) {
    try {
      st = trainer.step();
    } catch (const Error& e) {
      if (tty) std::fputc('\n', stderr);
      throw Error(std::string(e.what()) +
                  (nn::is_checkpoint(checkpoint)
                       ? "; the last checkpoint (step " +
                             std::to_string(nn::read_checkpoint(checkpoint).step) + ") stays in '" +
                             checkpoint + "'"
                       : "; no checkpoint was saved"));
    }
    const bool end = st.step == last;
    if (validating && ((opt.val_every > 0 && st.step % opt.val_every == 0) || end))
      st.val_loss = trainer.validate();
    log << st.step << ',' << csv_number(st.loss) << ',' << csv_number(st.val_loss) << ','
        << csv_number(st.lr) << ',' << csv_number(st.grad_norm) << ','
        << csv_number(st.tokens_per_s) << '\n';
    log.flush();
    if ((c.save_every > 0 && st.step % c.save_every == 0) || end)
      nn::save_checkpoint(checkpoint, trainer, st);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double done = static_cast<double>(st.step - first);
    const double left = secs / done * static_cast<double>(last - st.step);
    const double tps = done * static_cast<double>(opt.batch * opt.accum * opt.seq_len) / secs;
    std::string line = "step " + std::to_string(st.step) + "/" + std::to_string(opt.steps) +
                       " loss " + fmt("%.4f", st.loss);
    if (st.val_loss == st.val_loss) line += " val " + fmt("%.4f", st.val_loss);
    line += " lr " + fmt("%.3g", st.lr) + " | " + fmt("%.0f", tps) + " tokens/s | " +
            duration(left) + " left";
    if (tty)
      std::fprintf(stderr, "\r%-100s%s", line.c_str(), end ? "\n" : "");
    else if (end || st.step % every_line == 0 || st.val_loss == st.val_loss)
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fprintf(stderr, "train: step %lld, loss %.4f; checkpoint in %s, log in %s\n",
               static_cast<long long>(st.step), st.loss, checkpoint.c_str(), log_path.c_str());
  return kExitOk;
}

}  // namespace

void add_train_command(CLI::App& root, int& status) {
  auto cli = std::make_shared<TrainCli>();
  CLI::App* cmd = root.add_subcommand(
      "train", "Train a language model (byte text or .npy token ids) with checkpoints and resume");
  add_train_options(cmd, *cli);
  cmd->callback([cli, &status] { status = run_train(*cli); });
}

}  // namespace strata::cli
