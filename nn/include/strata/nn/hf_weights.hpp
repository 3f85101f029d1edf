#pragma once
// Hugging Face checkpoints onto DecoderLM and back. Llama names:
// model.embed_tokens, model.layers.N.{input_layernorm, self_attn.{q,k,v,o}_proj,
// post_attention_layernorm, mlp.{gate,up,down}_proj}, model.norm, lm_head
// (absent when tied); q, k and v are fused into attn.qkv and gate and up into
// mlp.gate_up at load time, split again on save. GPT-2 names, with or without
// "transformer.": wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2,
// mlp.c_fc, mlp.c_proj}, ln_f; the Conv1D weights are stored [in, out] and
// transposed on load and save. docs/guide/models.md.
#include <string>

#include "strata/nn/config.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/safetensors.hpp"

namespace strata::nn {

// Replaces every parameter of `model` with the checkpoint's (converted from
// f32/f16/bf16/f64 to the model's dtype, moved to its device). A missing,
// unexpected, mis-shaped or mis-typed tensor is a strata::Error naming the
// tensor and `source` (the file), raised before the model is touched.
// Known non-parameters (GPT-2's attn.bias and attn.masked_bias, Llama's
// rotary_emb.inv_freq) are ignored; a tied lm_head.weight is accepted only
// when it equals the embedding.
void load_hf_into(DecoderLM& model, const TensorDict& tensors, const std::string& source);
DecoderLM load_hf(const ModelConfig& cfg, const TensorDict& tensors, const std::string& source,
                  DType dt = DType::f32, Device dev = Device::cpu());

// The model's parameters under Hugging Face names (CPU, contiguous, the
// model's dtype); GPT-2's with the "transformer." prefix, as transformers
// writes them.
TensorDict save_hf(DecoderLM& model);

// config.json + model.safetensors -> a model in `dt` on `dev`.
DecoderLM load_model(const std::string& config_path, const std::string& weights_path,
                     DType dt = DType::f32, Device dev = Device::cpu());
// Writes config.json and model.safetensors (Hugging Face names).
void save_model(DecoderLM& model, const std::string& config_path, const std::string& weights_path);

}  // namespace strata::nn
