// Training checkpoints: written into a sibling folder, flushed, then swapped
// in with one rename, so that a process killed during a save leaves the
// previous checkpoint whole (strata/nn/train.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "strata/detail/file_io.hpp"
#include "strata/error.hpp"
#include "strata/nn/hf_weights.hpp"
#include "strata/nn/safetensors.hpp"
#include "strata/nn/train.hpp"

namespace strata::nn {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kFormat = "strata-train-checkpoint 1";
constexpr const char* kState = "trainer_state.json";

[[noreturn]] void fail_errno(const std::string& what, const std::string& path) {
  throw Error("save_checkpoint: " + what + " '" + path + "': " + std::strerror(errno));
}

// Flushes a folder's entries (the files' names and renames) to disk.
void sync_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open folder", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail_errno("cannot flush folder", path);
}

std::string parent_of(const std::string& dir) {
  const fs::path p = fs::path(dir).parent_path();
  return p.empty() ? "." : p.string();
}

json nan_as_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

const char* order_name(DataOrder o) {
  return o == DataOrder::sequential ? "sequential" : "shuffled";
}

json options_json(const TrainOptions& o) {
  return json{{"seq_len", o.seq_len},
              {"batch", o.batch},
              {"accum", o.accum},
              {"steps", o.steps},
              {"schedule", o.schedule == LrSchedule::Kind::cosine ? "cosine" : "constant"},
              {"lr", o.lr},
              {"min_lr", o.min_lr},
              {"warmup", o.warmup},
              {"weight_decay", o.weight_decay},
              {"clip", o.clip},
              {"optimizer", o.optimizer},
              {"dtype", std::string(dtype_name(o.dtype))},
              {"momentum", o.momentum},
              {"nesterov", o.nesterov},
              {"order", order_name(o.order)},
              {"seed", o.seed},
              {"val_fraction", o.val_fraction},
              {"val_every", o.val_every},
              {"val_batches", o.val_batches}};
}

TrainOptions options_from(const json& j) {
  TrainOptions o;
  o.seq_len = j.at("seq_len").get<std::int64_t>();
  o.batch = j.at("batch").get<std::int64_t>();
  o.accum = j.at("accum").get<std::int64_t>();
  o.steps = j.at("steps").get<std::int64_t>();
  const std::string sched = j.at("schedule").get<std::string>();
  if (sched != "cosine" && sched != "constant") throw Error("schedule '" + sched + "' is unknown");
  o.schedule = sched == "cosine" ? LrSchedule::Kind::cosine : LrSchedule::Kind::constant;
  o.lr = j.at("lr").get<double>();
  o.min_lr = j.at("min_lr").get<double>();
  o.warmup = j.at("warmup").get<std::int64_t>();
  o.weight_decay = j.at("weight_decay").get<double>();
  o.clip = j.at("clip").get<double>();
  o.optimizer = j.at("optimizer").get<std::string>();
  o.dtype = parse_dtype(j.value("dtype", std::string("f32")));
  if (o.dtype != DType::f32 && o.dtype != DType::bf16)
    throw Error("dtype '" + std::string(dtype_name(o.dtype)) + "': expected f32 or bf16");
  o.momentum = j.at("momentum").get<double>();
  o.nesterov = j.value("nesterov", false);
  const std::string order = j.at("order").get<std::string>();
  if (order != "sequential" && order != "shuffled") throw Error("order '" + order + "' is unknown");
  o.order = order == "sequential" ? DataOrder::sequential : DataOrder::shuffled;
  o.seed = j.at("seed").get<std::uint64_t>();
  o.val_fraction = j.at("val_fraction").get<double>();
  o.val_every = j.at("val_every").get<std::int64_t>();
  o.val_batches = j.at("val_batches").get<std::int64_t>();
  return o;
}

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void write_text(const std::string& path, const std::string& text) {
  detail::ReplacingFile f(path, "save_checkpoint");
  f.write(text.data(), text.size());
  f.commit();
}

// The folder holding the checkpoint `dir` names: dir itself, or dir.old when
// a fallback save was stopped between its two renames.
std::string resolve(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / kState, ec)) return dir;
  if (fs::exists(fs::path(dir + ".old") / kState, ec)) return dir + ".old";
  return dir;
}

}  // namespace

void save_checkpoint(const std::string& dir, Trainer& t, const StepStats& last) {
  const std::string tmp = dir + ".tmp", old = dir + ".old";
  std::error_code ec;
  // A fallback save stopped between its renames left only dir.old: put it back.
  if (!fs::exists(dir, ec) && fs::exists(fs::path(old) / kState, ec) &&
      ::rename(old.c_str(), dir.c_str()) != 0)
    fail_errno("cannot restore", old);
  fs::remove_all(tmp, ec);
  if (ec) throw Error("save_checkpoint: cannot clear '" + tmp + "': " + ec.message());
  fs::remove_all(old, ec);
  if (!fs::create_directory(tmp, ec) || ec)
    throw Error("save_checkpoint: cannot create '" + tmp + "': " + ec.message());

  DecoderLM& model = t.model();
  save_config((fs::path(tmp) / "config.json").string(), model.config());
  save_safetensors((fs::path(tmp) / "model.safetensors").string(), save_hf(model),
                   {{"format", "pt"}});
  TensorDict optim;
  for (const auto& [name, tensor] : t.optimizer().state()) optim[name] = tensor;
  save_safetensors((fs::path(tmp) / "optimizer.safetensors").string(), optim,
                   {{"optimizer", t.options().optimizer}});
  const TrainOptions& o = t.options();
  const json state{{"format", kFormat},
                   {"step", t.steps_done()},
                   {"sequences_seen", t.steps_done() * o.accum * o.batch},
                   {"data",
                    {{"path", t.data().path},
                     {"tokens", static_cast<std::int64_t>(t.data().ids.size())},
                     {"train_tokens", t.train_tokens()},
                     {"val_tokens", t.val_tokens()},
                     {"fnv1a64", hex(t.data().hash())}}},
                   {"rng", {{"kind", "seeded"}, {"seed", o.seed}}},
                   {"options", options_json(o)},
                   {"last",
                    {{"loss", nan_as_null(last.loss)},
                     {"val_loss", nan_as_null(last.val_loss)},
                     {"lr", nan_as_null(last.lr)},
                     {"grad_norm", nan_as_null(last.grad_norm)}}}};
  write_text((fs::path(tmp) / kState).string(), state.dump(2) + "\n");
  sync_dir(tmp);

  if (fs::exists(dir, ec)) {
    // One atomic swap: dir becomes the new checkpoint, tmp the previous one.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
      sync_dir(parent_of(dir));
      fs::remove_all(tmp, ec);
      return;
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) fail_errno("cannot swap in", dir);
    // No exchange on this file system: two renames; load finds dir.old if
    // the process stops between them.
    if (::rename(dir.c_str(), old.c_str()) != 0) fail_errno("cannot move aside", dir);
  }
  if (::rename(tmp.c_str(), dir.c_str()) != 0) fail_errno("cannot rename into", dir);
  sync_dir(parent_of(dir));
  fs::remove_all(old, ec);
}

bool is_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(resolve(dir)) / kState, ec);
}

CheckpointInfo read_checkpoint(const std::string& dir_in) {
  CheckpointInfo info;
  info.dir = resolve(dir_in);
  const std::string path = (fs::path(info.dir) / kState).string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error("read_checkpoint '" + dir_in + "': not a checkpoint (no " + kState + ")");
  const std::vector<std::uint8_t> bytes = detail::read_file_bytes(path, "read_checkpoint");
  try {
    const json j = json::parse(bytes.begin(), bytes.end());
    if (j.at("format").get<std::string>() != kFormat)
      throw Error("format is not '" + std::string(kFormat) + "'");
    info.step = j.at("step").get<std::int64_t>();
    info.options = options_from(j.at("options"));
    const json& d = j.at("data");
    info.data_path = d.at("path").get<std::string>();
    info.data_tokens = d.at("tokens").get<std::int64_t>();
    info.data_hash = std::stoull(d.at("fnv1a64").get<std::string>(), nullptr, 16);
    const json& loss = j.at("last").at("loss");
    info.loss = loss.is_null() ? std::nan("") : loss.get<double>();
  } catch (const std::exception& e) {
    throw Error("read_checkpoint '" + path + "': " + e.what());
  }
  info.config = load_config((fs::path(info.dir) / "config.json").string());
  return info;
}

void load_checkpoint(const CheckpointInfo& info, Trainer& t) {
  const std::string where = "load_checkpoint '" + info.dir + "': ";
  if (info.data_tokens != static_cast<std::int64_t>(t.data().ids.size()) ||
      info.data_hash != t.data().hash())
    throw Error(where + "it was trained on " + std::to_string(info.data_tokens) + " tokens of '" +
                info.data_path + "' (FNV-1a " + hex(info.data_hash) + "); '" + t.data().path +
                "' holds " + std::to_string(t.data().ids.size()) + " other tokens (" +
                hex(t.data().hash()) + ")");
  if (info.options.optimizer != t.options().optimizer)
    throw Error(where + "its optimizer is " + info.options.optimizer + ", not " +
                t.options().optimizer);
  // Both files read and checked before the model or the optimizer changes.
  const std::string weights = (fs::path(info.dir) / "model.safetensors").string();
  const std::string optim = (fs::path(info.dir) / "optimizer.safetensors").string();
  const SafetensorsFile w = load_safetensors(weights);
  const SafetensorsFile o = load_safetensors(optim);
  NamedState state;
  for (const auto& [name, tensor] : o.tensors) state.emplace_back(name, tensor);
  load_hf_into(t.model(), w.tensors, weights);
  t.optimizer().load_state(state);
  t.set_steps_done(info.step);
}

}  // namespace strata::nn
