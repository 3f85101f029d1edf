#pragma once
// Masking and selection ops a training loop writes: tril / triu (a
// triangle of each matrix), dropout (a seeded random mask) and topk (the k
// largest or smallest along a dim). Each has a backward on the tape
// (docs/guide/autograd.md); semantics: docs/guide/ops.md.
#include <cstdint>

#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// x [..., R, C] (rank >= 2, every dtype)  ->  out [..., R, C]: element (i, j)
// of each matrix kept when j - i <= diagonal (tril) or j - i >= diagonal
// (triu), else 0, as PyTorch: diagonal 0 is the main diagonal, > 0 above it,
// < 0 below. out may be x (in place).
Tensor tril(const Tensor& x, std::int64_t diagonal = 0, const OpOptions& opt = {});
Tensor triu(const Tensor& x, std::int64_t diagonal = 0, const OpOptions& opt = {});
void tril_out(const Tensor& out, const Tensor& x, std::int64_t diagonal = 0,
              const OpOptions& opt = {});
void triu_out(const Tensor& out, const Tensor& x, std::int64_t diagonal = 0,
              const OpOptions& opt = {});

// x [...] (floating)  ->  out [...]: each element kept with probability
// 1 - p and scaled by 1 / (1 - p), else exactly 0 (a NaN or inf dropped is 0
// too). The mask is a pure function of (seed, the element's index in out's
// row-major order) -- the counter generator of Tensor::rand
// (strata/detail/counter_rng.hpp): element e is dropped when the top 53 bits
// of random_bits(seed, e), read as u in [0, 1), are below p -- so every
// backend and layout draws the same mask, and the backward regenerates it
// from the seed instead of keeping it. p = 0 or training = false: a copy of
// x; p = 1: zeros; p outside [0, 1] (or NaN): a strata::Error. out may be x.
Tensor dropout(const Tensor& x, double p, std::uint64_t seed, bool training = true,
               const OpOptions& opt = {});
void dropout_out(const Tensor& out, const Tensor& x, double p, std::uint64_t seed,
                 bool training = true, const OpOptions& opt = {});

struct TopkResult {
  Tensor values;   // x's dtype
  Tensor indices;  // i64: positions along dim
};

// x [..., n, ...] (floating, rank >= 1)  ->  values, indices [..., k, ...]:
// the k largest (smallest with largest = false) elements along dim, best
// first. Ties: the lower index first. NaN ranks above every number (as in
// PyTorch): first with largest, last without. -0 and +0 tie. Every backend
// returns the same indices. sorted = false allows any order; every backend
// sorts anyway. k outside [0, n]: a strata::Error.
TopkResult topk(const Tensor& x, std::int64_t k, int dim = -1, bool largest = true,
                bool sorted = true, const OpOptions& opt = {});
void topk_out(const Tensor& values, const Tensor& indices, const Tensor& x, std::int64_t k,
              int dim = -1, bool largest = true, bool sorted = true, const OpOptions& opt = {});

}  // namespace strata
