#pragma once
// Rotary position embedding (RoPE) on any view, a slice of a fused QKV
// projection included.
#include <cstdint>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

enum class RotaryStyle {
  half,         // rotate-half (GPT-NeoX, Llama): pairs (i, i + r/2)
  interleaved,  // adjacent pairs (2i, 2i + 1) (GPT-J, the original RoPE paper)
};

struct RotaryOptions {
  double theta = 10000.0;         // base: frequency i is theta^(-2i / rotary_dims)
  std::int64_t rotary_dims = -1;  // the first r of the last dim rotate (-1: all); even
  RotaryStyle style = RotaryStyle::half;
};

// x [..., T, d], positions (i32 or i64) broadcastable to [..., T]  ->  out [..., T, d]
// Pair (a, b) at position p and frequency f becomes
// (a cos(p f) - b sin(p f), b cos(p f) + a sin(p f)); dims past rotary_dims are copied.
// The angle is computed as in Hugging Face transformers: f in f32, p f in f32
// (f64 for f64 inputs).
Tensor rotary(const Tensor& x, const Tensor& positions, const RotaryOptions& ro = {},
              const OpOptions& opt = {});
// out may be exactly x (in place).
void rotary_out(const Tensor& out, const Tensor& x, const Tensor& positions,
                const RotaryOptions& ro = {}, const OpOptions& opt = {});

}  // namespace strata
