// `strata generate`: text from a model, printed as it is produced, with the
// prefill and decode rates at the end (docs/guide/cli.md).
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "model_cli.hpp"
#include "strata/nn/generate.hpp"
#include "table.hpp"  // fmt

namespace strata::cli {
namespace {

struct GenerateCli {
  ModelCli model;
  std::string prompt;
  std::int64_t max_tokens = 128;
  nn::SamplingOptions sampling;
  bool print_ids = false;
};

// --top-k and --top-p shape sampling only; with temperature 0 decoding is
// greedy and they change nothing. transformers warns in that case
// (do_sample=False with top_k or top_p set) and decodes greedily: so do we.
void warn_if_greedy_ignores(const nn::SamplingOptions& s) {
  if (s.temperature > 0) return;
  std::string set;
  if (s.top_k > 0) set = "--top-k " + std::to_string(s.top_k);
  if (s.top_p < 1) set += (set.empty() ? "--top-p " : " and --top-p ") + fmt("%g", s.top_p);
  if (set.empty()) return;
  std::fprintf(stderr,
               "strata: warning: %s %s no effect with temperature 0 (greedy decoding); set "
               "--temperature above 0 to sample\n",
               set.c_str(), set.find(" and ") == std::string::npos ? "has" : "have");
}

// --top-p is a probability mass in (0, 1], as the sampler checks it (and as
// transformers' top_p): the help states that interval, and a value outside
// it is refused while the command line is parsed, naming the flag.
CLI::Validator top_p_range() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double p = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || !(p > 0 && p <= 1))
          return "'" + s + "' must be a number in (0, 1]";
        return "";
      },
      "in (0, 1]");
}

int run_generate(const GenerateCli& cli) {
  if (cli.prompt.empty()) throw UsageError("--prompt: must not be empty");
  // The sampler's own checks (top_p in (0, 1], a finite temperature) before
  // the model loads and the prompt is echoed: a bad value is a usage error
  // that prints nothing on stdout.
  try {
    (void)nn::Sampler(cli.sampling);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  nn::DecoderLM model = load_cli_model(cli.model);
  const std::vector<std::int64_t> prompt = nn::ByteTokenizer::encode(cli.prompt);
  require_context<UsageError>(model, static_cast<std::int64_t>(prompt.size()) + cli.max_tokens,
                              "generate: the prompt (" + std::to_string(prompt.size()) +
                                  " tokens) plus --max-tokens " + std::to_string(cli.max_tokens));
  warn_if_greedy_ignores(cli.sampling);
  std::fputs(cli.prompt.c_str(), stdout);
  std::fflush(stdout);
  // Bytes go out as they come: a terminal puts multi-byte characters together.
  const nn::GenerationResult r =
      nn::generate(model, prompt, cli.max_tokens, cli.sampling, [](std::int64_t tok) {
        std::fputc(static_cast<int>(tok), stdout);
        std::fflush(stdout);
        return true;
      });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  std::fprintf(stderr,
               "generate: %s on %s; prefill %lld tokens in %.2f ms (%.0f tokens/s); decode %lld "
               "tokens in %.2f ms (%.0f tokens/s)\n",
               dtype_name(model.dtype()).data(), model_placement(model).c_str(),
               static_cast<long long>(r.prompt_tokens), r.prefill_seconds * 1e3,
               r.prefill_tokens_per_second(),
               static_cast<long long>(r.tokens.empty() ? 0 : r.tokens.size() - 1),
               r.decode_seconds * 1e3, r.decode_tokens_per_second());
  if (cli.print_ids) {
    std::string ids;
    for (std::int64_t t : r.tokens) ids += (ids.empty() ? "" : " ") + std::to_string(t);
    std::fprintf(stderr, "ids: %s\n", ids.c_str());
  }
  return kExitOk;
}

}  // namespace

void add_generate_command(CLI::App& root, int& status) {
  auto cli = std::make_shared<GenerateCli>();
  CLI::App* cmd = root.add_subcommand(
      "generate", "Generate text with a model (byte-level vocabulary of 256), printed as it comes");
  add_model_options(cmd, cli->model);
  const char* g = "Generation";
  cmd->add_option("--prompt", cli->prompt, "the text to continue")->required()->group(g);
  cmd->add_option("--max-tokens", cli->max_tokens, "tokens to generate (default 128)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 30))
      ->group(g);
  cmd->add_option("--temperature", cli->sampling.temperature, "0 (default): greedy")
      ->check(CLI::Range(0.0, 1e6))
      ->group(g);
  cmd->add_option("--top-k", cli->sampling.top_k, "keep the k most likely tokens (0: all)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 30))
      ->group(g);
  cmd->add_option("--top-p", cli->sampling.top_p, "keep the smallest set with mass >= p (1: all)")
      ->check(top_p_range())
      ->group(g);
  cmd->add_option("--seed", cli->sampling.seed, "seed of the sampler (default 0)")->group(g);
  cmd->add_flag("--print-ids", cli->print_ids, "also print the generated ids on stderr")->group(g);
  cmd->callback([cli, &status] { status = run_generate(*cli); });
}

}  // namespace strata::cli
