#pragma once
// The generic cross-backend op runner. A small OpDescriptor per op says
// what the op takes (inputs, their shapes, dtypes and value fills), which
// dtypes and layouts to try, how to call its `_out` form and how close a
// result must be to the f64 reference. run_op_case() then builds the inputs
// in the layout on every available backend's device (the same logical
// values everywhere), runs the op into a strided output view inside a
// NaN-poisoned buffer with guard regions, checks that every output element
// was written and nothing outside the view was, and compares each result
// with the reference backend run through the same public op on f64 copies
// of the inputs. The attention harness (harness.hpp) uses the same pieces:
// guarded outputs, layout realisation and the comparison.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/dtype.hpp"
#include "strata/op_options.hpp"
#include "strata/tensor.hpp"

namespace strata::harness {

// ---- building blocks, shared with the attention harness ------------------------

// A strided view inside a flat 1-D buffer of `buffer_numel` elements
// (shape, strides and offset in elements).
struct ViewSpec {
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  std::int64_t buffer_numel = 0;
};
// Buffer index of every logical element, in row-major logical order.
std::vector<std::int64_t> view_positions(const ViewSpec& s);

// An output buffer for a kernel under test: `guard` elements of sentinel
// before and after the view, the sentinel in the view's gaps too, and a
// poison NaN (a bit pattern no kernel computes; for bool and the integer
// dtypes a value outside what a kernel writes) at every element of the
// view. Poison and sentinel are written with the dtype's own item size.
struct GuardedOutput {
  ViewSpec spec;  // the view inside `host` (offset includes the leading guard)
  Tensor host;    // 1-D host buffer, buffer_numel elements of the dtype
  // The view on `dev`: a fresh copy of the buffer there (never the host original).
  Tensor make_view(Device dev, Tensor* buffer_out) const;
};
inline constexpr std::int64_t kGuardElements = 19;
GuardedOutput make_guarded_output(ViewSpec spec, DType dt, std::int64_t guard = kGuardElements);

// The result of reading a guarded buffer back (from any device).
struct GuardedRead {
  std::vector<double> values;         // the view's elements, logical row-major order
  bool guard_intact = true;           // every element outside the view still the sentinel
  bool fully_written = true;          // no element of the view still the poison
  std::int64_t first_unwritten = -1;  // logical index of the first poisoned element
  std::int64_t first_guard_hit = -1;  // buffer index of the first overwritten guard element
  std::int64_t unwritten = 0, guard_hits = 0;
};
GuardedRead read_guarded_output(const Tensor& buffer, const ViewSpec& spec, DType dt);
// True when the element at p holds the poison / the sentinel of dt (bit for bit).
bool is_poison(const void* p, DType dt);
bool is_guard_sentinel(const void* p, DType dt);

// Machine epsilon of a dtype (0 for bool and the integer dtypes).
double dtype_eps(DType dt);

// ---- layouts -----------------------------------------------------------------------

// How an input (and the output) of an op case sits in memory. Every layout
// holds the same logical values for the same seed, only the strides differ
// (broadcast also makes the values repeat along the broadcast dim).
enum class OpLayout {
  contiguous,  // row-major
  transposed,  // stored with the last two dims swapped, viewed back (rank >= 2)
  broadcast,   // the first dim of size > 1 stored once and expanded with stride 0 (inputs only)
  negative,    // the first and last dims flipped: negative strides
  sliced,      // a narrow slice of the last dim of a wider fused buffer, at an offset
               // (the k part of a fused [.., 3n + 1] row)
  strided,     // every other element of the last dim (stride 2)
};
std::string_view op_layout_name(OpLayout l);
const std::vector<OpLayout>& all_op_layouts();
// The spec of `shape` in layout `l`; `output` = the spec is for an output
// (broadcast, which cannot be written through, is then contiguous).
ViewSpec layout_spec(const Shape& shape, OpLayout l, bool output = false);

// ---- descriptors -------------------------------------------------------------------

// How an input's values are drawn (seeded; the same on every backend).
enum class Fill {
  normal,       // N(0, 1) (integer dtypes: round(4 N(0, 1)))
  positive,     // uniform [0.1, 3) (log, sqrt, rsqrt, div's denominator)
  nonzero,      // +-[0.5, 2)
  boolean,      // true with probability 1/2
  ids,          // integers in [0, range)
  positions,    // integers in [0, range)
  ties,         // round(2 N(0, 1)) / 2: few distinct values, so rows hold tied maxima
  permutation,  // distinct integers in [0, range): the first n of a seeded shuffle
                // (n <= range; beyond that the shuffle repeats)
};

struct InputSpec {
  std::string name;
  Shape shape;
  std::optional<DType> dtype;  // nullopt: the case dtype
  Fill fill = Fill::normal;
  std::int64_t range = 0;      // ids, positions, permutation: values in [0, range)
  bool follows_layout = true;  // false: always contiguous
};

// A result may differ from the f64 reference, per element, by
//   ulps * eps(out) * |ref| + floor_ulps * (eps(out) + growth * eps(compute)) * scale
// where eps(compute) is f64's for f64 cases and f32's otherwise (f16/bf16
// compute in f32), scale the largest finite |ref| of the output (1 if none),
// and growth the length over which rounding errors accumulate (a row op's
// row, a matmul's K). Integer and bool outputs must match exactly.
struct Tolerance {
  double ulps = 4;
  double floor_ulps = 4;
  double growth = 1;
};

struct OpOutput {
  Shape shape;
  DType dtype;
};

// What the runner calls: the op's `_out` form (or an in-place op) writing
// into `out`, given the inputs in the descriptor's order.
using OpRunFn =
    std::function<void(const Tensor& out, const std::vector<Tensor>& in, const OpOptions& opt)>;

struct OpDescriptor {
  std::string name;    // "add (broadcast)", "sum dim=1", ...
  std::string family;  // "binary", "unary", "reduce", ... (tests and `strata check` group by it)
  // Registry ops the call dispatches to (gating: an op none of whose
  // kernels is registered yet is reported as not checked, not run).
  std::vector<std::string> registry_ops;
  std::vector<InputSpec> inputs;
  std::vector<DType> dtypes = {DType::f32, DType::f64, DType::f16, DType::bf16};
  std::vector<OpLayout> layouts = all_op_layouts();
  bool output_follows_layout = true;  // false: the output is always contiguous (still guarded)
  // Output shape and dtype from the inputs (any layout) and the case dtype;
  // unset: input 0's shape and the case dtype.
  std::function<OpOutput(const std::vector<Tensor>& in, DType dt)> output;
  OpRunFn run;
  std::function<Tolerance(DType dt)> tolerance;  // unset: Tolerance{} for every dtype
  std::string describe() const;                  // one line: name, inputs, dtypes
};

// A kernel under test outside the registry (a prototype, or a broken one
// for the runner's own tests): called like the descriptor's run, on `device`.
struct OpExtraRunner {
  std::string name;
  Device device = Device::cpu();
  OpRunFn run;
};

// ---- results -----------------------------------------------------------------------

struct OpBackendResult {
  std::string backend;
  std::string kernels;  // registry kernels for (op, backend, out dtype), comma separated
  bool checked = true;  // false: no kernel of the op on this backend yet (see skip_reason)
  std::string skip_reason;
  std::string error;              // the call threw (the case then fails)
  std::int64_t over_tol = 0;      // elements outside the bound
  std::int64_t nan_mismatch = 0;  // NaN in one, not the other
  std::int64_t inf_mismatch = 0;  // infinite in one, not the same in the other
  double max_abs_err = 0;
  double worst_ratio = 0;         // max |got - ref| / bound over finite elements
  std::int64_t worst_index = -1;  // logical (row-major) index of the worst element
  Shape worst_coord;
  double worst_got = 0, worst_ref = 0, worst_bound = 0;
  bool guard_intact = true;
  bool fully_written = true;
  std::int64_t unwritten = 0, guard_hits = 0;
  bool pass = false;
  std::string summary() const;  // one line
};

struct OpCaseReport {
  std::string op;           // descriptor name
  std::string description;  // descriptor, dtype, layout (as realised per input), seed
  DType dtype = DType::f32;
  OpLayout layout = OpLayout::contiguous;
  std::uint64_t seed = 0;
  std::string error;                    // the case could not be built or the reference threw
  std::vector<std::string> not_landed;  // registry ops with no kernel at all: nothing run
  std::vector<OpBackendResult> results;
  bool checked() const { return not_landed.empty(); }
  bool all_pass() const;        // no error, every checked result passes (vacuous when not checked)
  std::string summary() const;  // multi-line
};

// Runs one (descriptor, dtype, layout) on every compiled and available
// backend, then on `extra`.
OpCaseReport run_op_case(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed,
                         const std::vector<OpExtraRunner>& extra = {});
// Every dtype x layout of the descriptor (seeds derived from `seed`).
std::vector<OpCaseReport> run_op(const OpDescriptor& d, std::uint64_t seed,
                                 const std::vector<OpExtraRunner>& extra = {});

// Registry ops of `d` that no backend has a kernel for yet.
std::vector<std::string> unlanded_registry_ops(const OpDescriptor& d);

// ---- gradients ---------------------------------------------------------------------

// The gradient case of a descriptor: the op run under an autograd tape and
// sent back a seeded upstream gradient g (the gradient of sum(out * g)).
// Every floating input's gradient, on every available backend in the
// case's dtype and layout, is compared with the reference backend's in f64
// on contiguous copies (a broadcast input's gradient is the sum over its
// stride-0 dims). With `finite_differences`, the reference's own gradient
// is checked against central differences in f64 first (small cases).
struct GradCaseReport {
  std::string op, description;
  std::string skip_reason;            // not run: no floating input, no backward yet, ...
  std::vector<std::string> failures;  // one line each
  bool skipped() const { return !skip_reason.empty(); }
  bool pass() const { return failures.empty(); }
  std::string summary() const;
};
GradCaseReport run_grad_case(const OpDescriptor& d, DType dt, OpLayout layout, std::uint64_t seed,
                             bool finite_differences = false);
// Whether a sweep checks this case against finite differences too: once per
// descriptor, in f64 on contiguous inputs, when they hold at most 1536
// elements in all (each element costs two runs of the op).
bool grad_case_takes_finite_differences(const OpDescriptor& d, DType dt, OpLayout layout);

// The descriptors of every public op (harness/src/op_catalog*.cpp).
const std::vector<OpDescriptor>& op_catalog();

}  // namespace strata::harness
