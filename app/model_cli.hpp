#pragma once
// Options shared by the model commands (`strata generate`, `strata forward`):
// where the weights and config are, and which backend and dtype run them.
#include <cstdint>
#include <string>

#include "commands.hpp"
#include "strata/nn/decoder.hpp"

namespace strata::cli {

struct ModelCli {
  std::string weights;  // model.safetensors
  std::string config;   // config.json
  std::string backend = "auto";
  std::string dtype = "f32";
};

void add_model_options(CLI::App* cmd, ModelCli& m);
// The model on the backend's device in the chosen dtype; errors name the file.
nn::DecoderLM load_cli_model(const ModelCli& m);

// Throws E unless `positions` fit the model's context (max_position_embeddings):
// "<what> is <positions> positions, past the model's context of <limit>
// (max_position_embeddings)". Both model commands hold their inputs to it.
template <class E = Error>
void require_context(const nn::DecoderLM& model, std::int64_t positions, const std::string& what) {
  const std::int64_t context = model.config().max_position_embeddings;
  if (positions > context)
    throw E(what + " is " + std::to_string(positions) + " positions, past the model's context of " +
            std::to_string(context) + " (max_position_embeddings)");
}

// The backend that runs the model and where its tensors live, for the
// summaries: "reference (cpu memory)", "cuda (cuda:0 memory)".
std::string model_placement(const nn::DecoderLM& model);

}  // namespace strata::cli
