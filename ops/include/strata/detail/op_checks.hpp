#pragma once
// Validation shared by every op's front end, so that every op reports bad
// input the same way: strata::Error("<op>: <argument> <what> <value>"),
// thrown before anything is allocated or written.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "strata/registry.hpp"
#include "strata/tensor.hpp"

namespace strata::detail {

// An argument and the name errors call it by.
struct Named {
  const Tensor* t;
  const char* name;
};

void check_defined(const char* op, const Tensor& t, const char* name);
// Every defined tensor in `ts` is on the device of the first one.
Device check_same_device(const char* op, std::initializer_list<Named> ts);
void check_dtype(const char* op, const Tensor& t, const char* name, DType want,
                 const char* want_from);
void check_floating(const char* op, const Tensor& t, const char* name);
void check_integer(const char* op, const Tensor& t, const char* name);
void check_rank_at_least(const char* op, const Tensor& t, const char* name, int rank);

// True when two elements of `t` may share memory (a sufficient test: with
// dims sorted by |stride| each stride must step over everything the smaller
// ones span; rejects a few exotic safe interleavings, never accepts a bad one).
bool has_internal_overlap(const Tensor& t);

// A caller-supplied output: shape, dtype and device as wanted, and no two
// of its elements in the same memory. `from` names what dt and dev come
// from in messages ("q", "the inputs").
void check_output(const char* op, const Tensor& out, const char* name, const Shape& shape, DType dt,
                  Device dev, const char* from = "the inputs");
// `out` may be exactly an input (same storage, offset, shape and strides:
// an in-place elementwise op) when `allow_same` is set; any other overlap
// with an input is an error.
void check_no_overlap(const char* op, const Tensor& out, const char* out_name,
                      std::initializer_list<Named> inputs, bool allow_same = false);
bool same_view(const Tensor& a, const Tensor& b);

// A dim index in [-rank, rank) wrapped into [0, rank), naming the argument.
int wrap_dim(const char* op, int dim, int rank, const char* name);

// Registry::resolve_backend for a call's backend option.
inline BackendId resolve_backend(const char* op, const std::string& backend, Device dev) {
  return Registry::get().resolve_backend(op, backend, dev);
}

}  // namespace strata::detail
