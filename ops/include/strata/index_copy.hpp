#pragma once
// Indexed copy along a dim, as PyTorch's Tensor.index_copy_: the KV-cache
// append of a decoder whose positions live on the device (a step captured
// into a CUDA graph cannot narrow the cache at a host-side length).
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata {

// dst [..., N, ...] (N at `dim`), index [T] (i32 or i64), src [..., T, ...]
// (dst's shape but T at `dim`)  ->  dst, in place:
//   dst.select(dim, index[i]) = src.select(dim, i)   for every i in [0, T).
// Every dtype (a pure copy; src's dtype must equal dst's); any strides on
// dst, index and src (src may be broadcast with stride 0; dst may not have
// elements that share memory; src and index may not overlap dst). dim may be
// negative. Duplicate indices: which of the writes wins is unspecified (the
// cpu and cuda kernels copy rows in parallel), as in PyTorch.
//
// Under an autograd tape: src's gradient is dst's gathered at index, and the
// overwritten elements of dst get none (docs/guide/autograd.md).
//
// Bad arguments and an index value outside [0, N) are a strata::Error naming
// the op, the argument and the value ("index_copy_: index holds 7 at
// position 2, outside [0, 5)"), raised before anything is written. On cuda
// the index values are checked on the device and the result read back (the
// stream is synchronised) before the copy is launched -- except while the
// call's stream is being captured into a CUDA graph, where nothing may
// synchronise: then no error is raised, and the copy kernel skips (never
// writes) every element whose index is out of range, so no memory outside
// dst is touched; the rows with valid indices are copied.
void index_copy_(const Tensor& dst, int dim, const Tensor& index, const Tensor& src,
                 const OpOptions& opt = {});

}  // namespace strata
