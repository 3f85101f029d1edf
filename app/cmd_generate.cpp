// `strata generate`: text from a model, printed as it is produced, with the
// prefill and decode rates at the end (docs/cli.md).
#include <cstdio>
#include <iostream>

#include "model_cli.hpp"
#include "strata/nn/generate.hpp"

namespace strata::cli {
namespace {

struct GenerateCli {
  ModelCli model;
  std::string prompt;
  std::int64_t max_tokens = 128;
  nn::SamplingOptions sampling;
  bool print_ids = false;
};

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
  const std::int64_t context = model.config().max_position_embeddings;
  const auto need = static_cast<std::int64_t>(prompt.size()) + cli.max_tokens;
  if (need > context)
    throw UsageError("generate: the prompt (" + std::to_string(prompt.size()) +
                     " tokens) plus --max-tokens " + std::to_string(cli.max_tokens) + " is " +
                     std::to_string(need) + " positions, past the model's context of " +
                     std::to_string(context) + " (max_position_embeddings)");
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
               dtype_name(model.dtype()).data(), model.device().str().c_str(),
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
      ->check(CLI::Range(0.0, 1.0))
      ->group(g);
  cmd->add_option("--seed", cli->sampling.seed, "seed of the sampler (default 0)")->group(g);
  cmd->add_flag("--print-ids", cli->print_ids, "also print the generated ids on stderr")->group(g);
  cmd->callback([cli, &status] { status = run_generate(*cli); });
}

}  // namespace strata::cli
