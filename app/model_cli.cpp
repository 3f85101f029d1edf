#include "model_cli.hpp"

#include "attention_cli.hpp"  // require_backend
#include "strata/nn/hf_weights.hpp"
#include "strata/registry.hpp"

namespace strata::cli {

void add_model_options(CLI::App* cmd, ModelCli& m) {
  const char* g = "Model";
  cmd->add_option("--weights", m.weights, "model.safetensors (Hugging Face tensor names)")
      ->required()
      ->group(g);
  cmd->add_option("--config", m.config, "config.json (model_type llama or gpt2)")
      ->required()
      ->group(g);
  cmd->add_option("--backend", m.backend, "auto, reference, cpu or cuda")->group(g);
  cmd->add_option("--dtype", m.dtype, "the model's dtype: f32, bf16 or f16")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))
      ->group(g);
}

nn::DecoderLM load_cli_model(const ModelCli& m) {
  const BackendInfo* b = require_backend(m.backend);
  const Device dev = b ? Device{b->device, 0} : Device::cpu();
  nn::DecoderLM model = nn::load_model(m.config, m.weights, parse_dtype(m.dtype), dev);
  model.options().backend = m.backend;
  return model;
}

std::string model_placement(const nn::DecoderLM& model) {
  // "auto" resolves as each op call does: the fast backend of the device.
  const Registry& reg = Registry::get();
  const BackendId id = reg.resolve_backend("model", model.options().backend, model.device());
  return reg.backend(id).name + " (" + model.device().str() + " memory)";
}

}  // namespace strata::cli
