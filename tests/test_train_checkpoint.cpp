// Training checkpoints (strata/nn/train.hpp): a child process that trains and
// saves every step is killed with SIGKILL at random moments, many times; the
// checkpoint folder always loads and is exactly one of the steps the run
// saved (its weights the bytes an uninterrupted run had at that step). Also
// the save's leftovers and the fallback's `dir`.old.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <set>

#include "catch.hpp"
#include "test_train_util.hpp"

using namespace strata;
using train_test::TempDir;

namespace {

constexpr std::int64_t kSteps = 24;
constexpr const char* kChildEnv = "STRATA_TRAIN_KILL_CHECKPOINT";

nn::TrainOptions kill_options() {
  nn::TrainOptions o = train_test::tiny_options(kSteps);
  o.accum = 1;
  return o;
}

}  // namespace

// The child: trains to kSteps in the checkpoint named by the environment,
// resuming what is there, saving after every step. Hidden: it runs only when
// the test below starts it.
TEST_CASE("train: kill test child", "[.][train-kill-child]") {
  const char* cp = std::getenv(kChildEnv);
  if (cp == nullptr) return;
  const nn::TokenData data = train_test::tiny_text();
  nn::DecoderLM model = train_test::tiny_model();
  nn::Trainer tr(model, data, kill_options());
  if (nn::is_checkpoint(cp)) nn::load_checkpoint(nn::read_checkpoint(cp), tr);
  while (tr.steps_done() < kSteps) nn::save_checkpoint(cp, tr, tr.step());
}

TEST_CASE("train: a process killed during saves leaves a whole checkpoint", "[train]") {
  // The weights after each step of an uninterrupted run.
  const nn::TokenData data = train_test::tiny_text();
  std::vector<std::string> ref(kSteps + 1);
  {
    nn::DecoderLM model = train_test::tiny_model();
    nn::Trainer tr(model, data, kill_options());
    for (std::int64_t s = 1; s <= kSteps; ++s) {
      tr.step();
      ref[static_cast<std::size_t>(s)] = train_test::weight_bytes(model);
    }
  }
  TempDir dir("kill");
  const std::string cp = dir / "checkpoint";
  // Prepared before fork: the child only execs (nothing that allocates).
  const std::string env_entry = std::string(kChildEnv) + "=" + cp;
  char* const argv[] = {const_cast<char*>("strata_tests"), const_cast<char*>("[train-kill-child]"),
                        nullptr};
  char* const envp[] = {const_cast<char*>(env_entry.c_str()), nullptr};
  std::mt19937 rng(20261203);
  // The kill lands at a random moment of the child's step-and-save cycle:
  // once the child has saved a step past the last one seen (its start-up
  // is over), after a delay of up to a few steps.
  std::uniform_int_distribution<int> delay_us(0, 40'000);
  int kills = 0, mid_save = 0, finished = 0;
  std::int64_t last_step = 0;
  for (int round = 0; round < 25; ++round) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::execve("/proc/self/exe", argv, envp);
      ::_exit(127);
    }
    int status = 0;
    bool reaped = false;
    for (int k = 0; k < 50'000 && !reaped; ++k) {  // at most about 10 s
      reaped = ::waitpid(pid, &status, WNOHANG) == pid;
      try {
        if (nn::is_checkpoint(cp) && nn::read_checkpoint(cp).step > last_step) break;
      } catch (const Error&) {  // a file read while the child replaced it
      }
      ::usleep(200);
    }
    if (!reaped) {
      ::usleep(static_cast<useconds_t>(delay_us(rng)));
      ::kill(pid, SIGKILL);
      REQUIRE(::waitpid(pid, &status, 0) == pid);
    }
    INFO("round " << round);
    if (WIFEXITED(status)) {  // trained to the end before the kill
      REQUIRE(WEXITSTATUS(status) == 0);
      REQUIRE(nn::read_checkpoint(cp).step == kSteps);
      ++finished;
      std::filesystem::remove_all(cp);
      last_step = 0;
      continue;
    }
    ++kills;
    if (std::filesystem::exists(cp + ".tmp")) ++mid_save;
    if (!nn::is_checkpoint(cp)) {
      CHECK(last_step == 0);  // none only before the first save completed
      continue;
    }
    const nn::CheckpointInfo info = nn::read_checkpoint(cp);
    INFO("checkpoint step " << info.step);
    REQUIRE(info.step >= 1);
    REQUIRE(info.step <= kSteps);
    CHECK(info.step >= last_step);
    last_step = info.step;
    nn::DecoderLM m =
        nn::load_model((std::filesystem::path(info.dir) / "config.json").string(),
                       (std::filesystem::path(info.dir) / "model.safetensors").string());
    const bool same_weights =
        train_test::weight_bytes(m) == ref[static_cast<std::size_t>(info.step)];
    CHECK(same_weights);
    nn::Trainer t(m, data, info.options);
    nn::load_checkpoint(info, t);
    CHECK(t.optimizer().steps() == info.step);
  }
  // The kills land in saves often (a save is most of a tiny step's time).
  WARN("kills " << kills << ", during a save " << mid_save << ", runs finished " << finished);
  CHECK(kills >= 12);
}

TEST_CASE("train: saves clear leftovers; a checkpoint moved aside is found at .old", "[train]") {
  TempDir dir("save");
  const std::string cp = dir / "cp";
  const nn::TokenData data = train_test::tiny_text();
  nn::DecoderLM model = train_test::tiny_model();
  nn::Trainer tr(model, data, kill_options());
  std::filesystem::create_directories(cp + ".tmp/junk");  // a save killed midway
  nn::save_checkpoint(cp, tr, tr.step());
  CHECK(!std::filesystem::exists(cp + ".tmp"));
  nn::save_checkpoint(cp, tr, tr.step());
  CHECK(!std::filesystem::exists(cp + ".tmp"));
  CHECK(nn::read_checkpoint(cp).step == 2);
  // The fallback (no RENAME_EXCHANGE) stopped between its two renames.
  std::filesystem::rename(cp, cp + ".old");
  REQUIRE(nn::is_checkpoint(cp));
  CHECK(nn::read_checkpoint(cp).dir == cp + ".old");
  nn::save_checkpoint(cp, tr, tr.step());
  CHECK(nn::read_checkpoint(cp).dir == cp);
  CHECK(nn::read_checkpoint(cp).step == 3);
  CHECK(!std::filesystem::exists(cp + ".old"));
  // The files of a checkpoint: exactly these.
  std::set<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(cp))
    names.insert(e.path().filename().string());
  CHECK(names == std::set<std::string>{"config.json", "model.safetensors", "optimizer.safetensors",
                                       "trainer_state.json"});
}
