#include "strata/nn/generate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace strata::nn {

// ---- ByteTokenizer ----------------------------------------------------------------
std::vector<std::int64_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<std::int64_t> ids;
  ids.reserve(text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(std::int64_t id) {
  check(id >= 0 && id < vocab_size, "ByteTokenizer::decode", "id ", id, " is not a byte");
  return std::string(1, static_cast<char>(static_cast<unsigned char>(id)));
}

std::string ByteTokenizer::decode(const std::vector<std::int64_t>& ids) {
  std::string s;
  s.reserve(ids.size());
  for (std::int64_t id : ids) s += decode(id);
  return s;
}

// ---- Sampler ----------------------------------------------------------------------
Sampler::Sampler(const SamplingOptions& opt) : opt_(opt), rng_(opt.seed) {
  check(opt.top_k >= 0, "Sampler", "top_k must be >= 0, got ", opt.top_k);
  check(opt.top_p > 0 && opt.top_p <= 1, "Sampler", "top_p must be in (0, 1], got ", opt.top_p);
  check(std::isfinite(opt.temperature), "Sampler", "temperature must be finite");
}

std::vector<std::pair<std::int64_t, double>> Sampler::candidates(
    const std::vector<float>& logits) const {
  check(!logits.empty(), "Sampler", "no logits");
  const auto n = static_cast<std::int64_t>(logits.size());
  if (opt_.temperature <= 0 || opt_.top_k == 1) {
    // The first maximum, as argmax in PyTorch.
    const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    return {{best, 1.0}};
  }
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  auto at = [&](std::int64_t i) { return logits[static_cast<std::size_t>(i)]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return at(a) > at(b); });
  if (opt_.top_k > 0 && opt_.top_k < n) order.resize(static_cast<std::size_t>(opt_.top_k));
  // Softmax of logits / temperature over the kept tokens, in f64.
  const double top = at(order.front());
  std::vector<std::pair<std::int64_t, double>> c;
  double total = 0;
  for (std::int64_t i : order) {
    const double p = std::exp((at(i) - top) / opt_.temperature);
    c.emplace_back(i, p);
    total += p;
  }
  for (auto& e : c) e.second /= total;
  if (opt_.top_p < 1) {
    double mass = 0;
    std::size_t keep = 0;
    while (keep < c.size() && mass < opt_.top_p) mass += c[keep++].second;
    c.resize(keep);
    for (auto& e : c) e.second /= mass;
  }
  return c;
}

std::int64_t Sampler::sample(const std::vector<float>& logits) {
  const auto c = candidates(logits);
  if (c.size() == 1) return c.front().first;
  // 53 random bits -> u in [0, 1).
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double acc = 0;
  for (const auto& [id, p] : c) {
    acc += p;
    if (u < acc) return id;
  }
  return c.back().first;  // u within rounding of 1
}

// ---- generate ---------------------------------------------------------------------
double GenerationResult::prefill_tokens_per_second() const {
  return prefill_seconds > 0 ? static_cast<double>(prompt_tokens) / prefill_seconds : 0.0;
}

double GenerationResult::decode_tokens_per_second() const {
  const auto steps = static_cast<double>(tokens.size() > 1 ? tokens.size() - 1 : 0);
  return decode_seconds > 0 ? steps / decode_seconds : 0.0;
}

GenerationResult generate(DecoderLM& model, const std::vector<std::int64_t>& prompt,
                          std::int64_t max_tokens, const SamplingOptions& sampling,
                          const std::function<bool(std::int64_t)>& on_token) {
  check(!prompt.empty(), "generate", "the prompt is empty");
  check(max_tokens >= 0, "generate", "max_tokens must be >= 0, got ", max_tokens);
  using clock = std::chrono::steady_clock;
  const auto T = static_cast<std::int64_t>(prompt.size());
  const std::int64_t V = model.config().vocab_size;
  GenerationResult r;
  r.prompt_tokens = T;
  if (max_tokens == 0) return r;
  Sampler sampler(sampling);
  KVCache cache = model.make_cache(1, T + max_tokens);
  const Device dev = model.device();

  auto t0 = clock::now();
  const Tensor ids = Tensor::from_vector(prompt, {1, T}, dev);
  const Tensor prefill = model.forward(ids, &cache);
  std::int64_t next = sampler.sample(prefill.select(1, T - 1).reshape({V}).to_vector<float>());
  r.prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  r.tokens.push_back(next);
  if (on_token && !on_token(next)) return r;

  // Decode: the id on the host (a cuda model's graph step reads it from
  // there) and the same logits every step, so nothing is allocated on the
  // device and a recorded decode graph is replayed.
  const Tensor step_ids = Tensor::zeros({1, 1}, DType::i64);
  const Tensor logits = Tensor::empty({1, 1, V}, DType::f32, dev);
  t0 = clock::now();
  while (static_cast<std::int64_t>(r.tokens.size()) < max_tokens) {
    step_ids.set_item({0, 0}, static_cast<double>(next));
    model.forward_out(logits, step_ids, &cache);
    next = sampler.sample(logits.to_vector<float>());
    r.tokens.push_back(next);
    if (on_token && !on_token(next)) break;
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  return r;
}

}  // namespace strata::nn
