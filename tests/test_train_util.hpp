#pragma once
// A tiny model, data and options shared by the training tests
// (tests/test_train_*.cpp): d 32, 2 layers, T 16, byte vocabulary.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "strata/nn/hf_weights.hpp"
#include "strata/nn/safetensors.hpp"
#include "strata/nn/train.hpp"
#include "test_nn_util.hpp"

namespace train_test {

// nn_test::tiny_llama with a byte vocabulary and a wider MLP.
inline strata::nn::ModelConfig tiny_config() {
  strata::nn::ModelConfig c = nn_test::tiny_llama(2);
  c.vocab_size = 256;
  c.intermediate_size = 64;
  return c;
}

inline strata::nn::DecoderLM tiny_model(std::uint64_t seed = 1) {
  strata::nn::DecoderLM m(tiny_config());
  strata::nn::init_normal(m, seed);
  m.options().backend = "cpu";
  return m;
}

// A repetitive text of `n` bytes.
inline strata::nn::TokenData tiny_text(std::size_t n = 2000) {
  const std::string line = "the quick brown fox jumps over the lazy dog. ";
  strata::nn::TokenData d;
  d.path = "tiny-text";
  for (std::size_t k = 0; k < n; ++k)
    d.ids.push_back(static_cast<unsigned char>(line[k % line.size()]));
  return d;
}

inline strata::nn::TrainOptions tiny_options(std::int64_t steps = 40) {
  strata::nn::TrainOptions o;
  o.seq_len = 16;
  o.batch = 2;
  o.accum = 2;
  o.steps = steps;
  o.lr = 3e-3;
  o.min_lr = 3e-4;
  o.warmup = 5;
  o.schedule = strata::nn::LrSchedule::Kind::cosine;
  o.weight_decay = 0.1;
  o.clip = 1.0;
  return o;
}

// The model's weights as the bytes of model.safetensors.
inline std::string weight_bytes(strata::nn::DecoderLM& m) {
  return strata::nn::safetensors_bytes(strata::nn::save_hf(m));
}

// A fresh folder under the temporary directory, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() /
           ("strata-train-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace train_test
