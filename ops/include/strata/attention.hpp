#pragma once
// softmax_attention: out = softmax(scale * q k^T + bias) v, on any strided
// layout, dispatched through the registry to the reference, cpu or cuda
// backend. The contract is in docs/guide/attention.md.
#include <cstdint>
#include <optional>
#include <string>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

enum class Causal { none, bottom_right, top_left };

struct AttentionOptions {
  std::optional<double> scale;  // default 1/sqrt(d); any finite value
  Causal causal = Causal::none;
  // Sliding window (left, right): row i keeps key j when
  // i + off - left <= j <= i + off + right; -1 on a side means unbounded.
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
  // Alignment of the window: off = N - M (bottom_right, default) or 0
  // (top_left). Causal::top_left also selects top_left for the window.
  bool window_top_left = false;
  // bool (true = keep) or float of q's dtype (added to the scaled scores),
  // broadcastable to [..., Hq, M, N]; may be any strided view.
  Tensor mask;
  // f32 only (other dtypes ignore it), in PyTorch's words: highest = exact
  // f32 products (the default); high = 3xTF32 on the tensor cores,
  // f32-accurate; medium = TF32 products (10-bit mantissas). Backends
  // without tensor-core kernels (reference, cpu), and cuda calls its TF32
  // kernels do not serve, run highest. docs/guide/attention.md, "Precision".
  Precision precision = Precision::highest;
  // "auto" (the backend that matches the tensors' device), "reference",
  // "cpu" or "cuda".
  std::string backend = "auto";
  void* stream = nullptr;  // cudaStream_t for the cuda backend; null = default stream
};

// q [..., Hq, M, d]  k [..., Hkv, N, d]  v [..., Hkv, N, dv]  ->  out [..., Hq, M, dv]
Tensor softmax_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionOptions& opt = {});

struct AttentionResult {
  Tensor out;  // [..., Hq, M, dv]
  Tensor lse;  // [..., Hq, M]: log-sum-exp of kept scores; -inf for empty rows
};
// As softmax_attention, also returning lse.
AttentionResult softmax_attention_lse(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const AttentionOptions& opt = {});

// Writes into caller tensors: out [..., Hq, M, dv] (any strides, must not
// overlap an input), lse [..., Hq, M] optional (pass an undefined Tensor).
// Nothing is written when validation fails.
void softmax_attention_out(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                           const AttentionOptions& opt = {}, const Tensor& lse = {});

// Name of the kernel that would serve this call ("cpu.attention.online_softmax").
std::string softmax_attention_kernel(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const AttentionOptions& opt = {});

}  // namespace strata
