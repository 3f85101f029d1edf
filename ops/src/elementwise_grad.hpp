#pragma once
// Internal to ops/src: the elementwise ops' backward (elementwise_grad.cpp),
// called by their front ends (elementwise.cpp) only while a tape records.
#include <array>
#include <initializer_list>

#include "strata/detail/autograd_record.hpp"
#include "strata/detail/op_checks.hpp"

namespace strata::detail {

// Before an `_out` form runs: refuses to overwrite an input that the op's
// backward reads (mul_out(a, a, b) would leave the backward a's new values).
void check_elementwise_in_place(const char* op, const Tensor& out,
                                std::initializer_list<Named> ins);

// The op's IterArgs::scalar[0] and [1] (a scalar operand; clamp's bounds).
using EwScalars = std::array<double, 2>;

// After the kernel ran: records op (its front-end name) with its backward.
void record_elementwise(autograd::TapeState& tape, const char* op, const EwScalars& s,
                        const Tensor& out, std::initializer_list<Named> ins, const OpOptions& opt);

}  // namespace strata::detail
