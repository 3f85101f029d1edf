// `strata forward`: logits of a model for token ids from a .npy file, for
// checking a model against another implementation (docs/guide/cli.md).
#include <iostream>

#include "model_cli.hpp"
#include "output_files.hpp"
#include "strata/npy.hpp"

namespace strata::cli {
namespace {

struct ForwardCli {
  ModelCli model;
  std::string tokens;
  std::string out;
};

int run_forward(const ForwardCli& cli) {
  check_outputs(
      {{cli.out, "--out"}},
      {{cli.tokens, "--tokens"}, {cli.model.weights, "--weights"}, {cli.model.config, "--config"}});
  Tensor ids = load_npy(cli.tokens, "--tokens");
  if (ids.dtype() != DType::i32 && ids.dtype() != DType::i64)
    throw Error("--tokens '" + cli.tokens + "': token ids must be int32 or int64, not " +
                std::string(dtype_name(ids.dtype())));
  if (ids.dim() == 1) ids = ids.unsqueeze(0);
  if (ids.dim() != 2)
    throw Error("--tokens '" + cli.tokens + "': expected [batch, T] ids, got shape " +
                shape_str(ids.shape()));
  nn::DecoderLM model = load_cli_model(cli.model);
  // Past the context a gpt2 model has no position embedding and a llama
  // model's rotary positions were never trained: refused, as generate does.
  require_context(model, ids.size(1),
                  "forward: each row of --tokens '" + cli.tokens + "' " + shape_str(ids.shape()));
  // [B, T, V] f32; ids out of the vocabulary are an error from the embedding.
  const Tensor logits = model.forward(ids.to(model.device()));
  write_outputs({{{cli.out, "--out"}, npy_bytes(logits, kNpyOut)}});
  std::cerr << "forward: " << dtype_name(model.dtype()) << " model on " << model_placement(model)
            << ": " << shape_str(ids.shape()) << " ids -> logits " << shape_str(logits.shape())
            << ' ' << dtype_name(npy_dtype(logits.dtype(), kNpyOut)) << " written to " << cli.out
            << "\n";
  return kExitOk;
}

}  // namespace

void add_forward_command(CLI::App& root, int& status) {
  auto cli = std::make_shared<ForwardCli>();
  CLI::App* cmd = root.add_subcommand(
      "forward",
      "Logits of a model for token ids: int32/int64 [batch, T] in, f32 [batch, T, vocab] out");
  add_model_options(cmd, cli->model);
  cmd->add_option("--tokens", cli->tokens, "token ids .npy (int32 or int64, [batch, T] or [T])")
      ->required();
  cmd->add_option("--out", cli->out, "logits .npy (float32 [batch, T, vocab])")->required();
  cmd->callback([cli, &status] { status = run_forward(*cli); });
}

}  // namespace strata::cli
