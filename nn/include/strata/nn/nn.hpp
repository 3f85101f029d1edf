#pragma once
// Umbrella header of strata::nn: modules, the decoder model, Hugging Face
// checkpoints (safetensors + config.json) and generation. docs/guide/models.md.
#include "strata/nn/attention.hpp"
#include "strata/nn/config.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/generate.hpp"
#include "strata/nn/hf_weights.hpp"
#include "strata/nn/layers.hpp"
#include "strata/nn/module.hpp"
#include "strata/nn/safetensors.hpp"
