#pragma once
// Text generation: a byte-level tokenizer, a seeded sampler (greedy,
// temperature, top-k, top-p) and the prefill-then-decode loop.
// docs/guide/models.md.
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/nn/decoder.hpp"

namespace strata::nn {

// Vocabulary of 256: a token is one byte of the UTF-8 text.
struct ByteTokenizer {
  static constexpr std::int64_t vocab_size = 256;
  static std::vector<std::int64_t> encode(std::string_view text);
  // Ids outside [0, 256) are a strata::Error.
  static std::string decode(const std::vector<std::int64_t>& ids);
  static std::string decode(std::int64_t id);
};

struct SamplingOptions {
  double temperature = 0.0;  // <= 0: greedy (argmax)
  std::int64_t top_k = 0;    // keep the k most likely tokens; 0: all
  double top_p = 1.0;        // keep the smallest set whose mass is >= top_p
  std::uint64_t seed = 0;
};

// Draws tokens from logits on the host. The same seed gives the same tokens
// for the same logits on every platform: the uniform draw is built from
// std::mt19937_64's bits, not from a library distribution.
class Sampler {
 public:
  explicit Sampler(const SamplingOptions& opt = {});
  // logits [V] -> a token id.
  std::int64_t sample(const std::vector<float>& logits);
  // The candidates sample() draws from, most likely first: (id, probability
  // renormalised over the kept set), after temperature, top-k and top-p.
  // Greedy returns the argmax alone with probability 1.
  std::vector<std::pair<std::int64_t, double>> candidates(const std::vector<float>& logits) const;

 private:
  SamplingOptions opt_;
  std::mt19937_64 rng_;
};

struct GenerationResult {
  std::vector<std::int64_t> tokens;  // generated ids (the prompt excluded)
  double prefill_seconds = 0;
  double decode_seconds = 0;  // all steps after the first token
  std::int64_t prompt_tokens = 0;
  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

// Prefill of `prompt` (non-empty ids [T]), then one token per step until
// `max_tokens` are produced or on_token returns false. The first token comes
// from the prefill's last logits; each step feeds the previous token at
// position T + i. Logits are read to the host (V floats) to sample.
GenerationResult generate(DecoderLM& model, const std::vector<std::int64_t>& prompt,
                          std::int64_t max_tokens, const SamplingOptions& sampling = {},
                          const std::function<bool(std::int64_t token)>& on_token = {});

}  // namespace strata::nn
