#pragma once
// Options shared by the model commands (`strata generate`, `strata forward`):
// where the weights and config are, and which backend and dtype run them.
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

}  // namespace strata::cli
