#pragma once
// Row gather: out[i..., :] = table[ids[i...], :].
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// ids [...] (i32 or i64), table [V, D]  ->  out [..., D] (table's dtype).
// An id outside [0, V) is a strata::Error naming the id and its index,
// raised before anything is written (on the GPU too: the ids are checked on
// the device and the result read back before the gather runs) -- except
// while the call's stream is being captured into a CUDA graph, where nothing
// may synchronise: then the row of a bad id is left unwritten (nothing
// outside the table is read) and checking the ids is the caller's job
// (docs/guide/graphs.md).
Tensor embedding(const Tensor& ids, const Tensor& table, const OpOptions& opt = {});
void embedding_out(const Tensor& out, const Tensor& ids, const Tensor& table,
                   const OpOptions& opt = {});

// The backward: table_grad [V, D] += the rows of grad [..., D], each added
// to row ids[...] (a scatter-add). Deterministic: a row's contributions are
// summed in the order of ids on every backend (no atomics), in f32 for
// f16/bf16 (f64 on the reference) and rounded once. ids are checked as
// embedding checks them, before anything is written.
void embedding_backward_out(const Tensor& table_grad, const Tensor& grad, const Tensor& ids,
                            const OpOptions& opt = {});

}  // namespace strata
