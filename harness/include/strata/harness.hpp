#pragma once
// The cross-backend attention harness: one AttentionCase runs on every
// available backend with its inputs in the requested memory layout, outputs
// NaN-poisoned and surrounded by guard regions, and is compared with the
// reference backend run in f64 on contiguous copies of the same inputs.
// Used by the tests, by `strata check`, and by anyone testing a new kernel.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/attention.hpp"
#include "strata/dtype.hpp"
#include "strata/tensor.hpp"

namespace strata::harness {

// How q, k, v (and out, lse) sit in memory. Every layout yields the same
// logical values for the same seed family, only the strides differ.
enum class Layout {
  contiguous,    // row-major
  transposed,    // stored with the last two dims swapped, viewed back
  sliced,        // a window (non-zero offset, padded rows/cols/heads) of a larger buffer
  fused_qkv,     // q, k, v are column slices of one [..., M, (Hq + 2 Hkv) d] buffer
                 // (heads interleaved); needs M == N and d == dv, else acts as `sliced`
  strided_cols,  // last-dim stride 2 (every other column of a wider buffer)
  broadcast,     // k and v stored once and expanded over the batch (stride 0);
                 // without batch dims, over the kv heads
  negative,      // negative strides: rows of k and v flipped, columns of q and v flipped
};
std::string_view layout_name(Layout l);
const std::vector<Layout>& all_layouts();

enum class MaskKind {
  none,
  bool_full,    // bool [batch..., Hq, M, N], ~70% kept
  float_full,   // q's dtype, full shape: N(0, 1) values with ~15% -inf
  bool_bcast,   // bool [M, N] stored transposed: fewer dims + non-unit strides
  float_bcast,  // q's dtype [1, M, N] viewed with column step 2 and expanded over heads
};
std::string_view mask_name(MaskKind m);

struct AttentionCase {
  Shape batch;  // leading dims (may be empty)
  std::int64_t Hq = 1, Hkv = 1, M = 1, N = 1, d = 1, dv = 1;
  bool q_2d = false;  // q [M, d], k [N, d], v [N, dv] (needs empty batch, Hq == Hkv == 1)
  DType dtype = DType::f32;
  Layout layout = Layout::contiguous;
  Causal causal = Causal::none;
  std::optional<std::pair<std::int64_t, std::int64_t>> window;
  bool window_top_left = false;
  std::optional<double> scale;
  MaskKind mask = MaskKind::none;
  // Every 4th query row (1, 5, 9, ...) gets all its keys masked (needs a mask;
  // a bool_full mask is used when mask == none).
  bool masked_rows = false;
  bool with_lse = true;
  double input_scale = 1.0;  // q is multiplied by this: large values = large logits
  std::uint64_t seed = 1;

  std::string describe() const;  // one line: every field, for INFO on failure
};

// The tests' usual batched case: batch [2], two query and two key/value
// heads, contiguous, no mask; callers change the fields they exercise.
AttentionCase batched_case(std::int64_t M, std::int64_t N, std::int64_t d, std::int64_t dv,
                           DType dt, std::uint64_t seed);

struct BackendResult {
  std::string backend;
  std::string kernel;      // registry name of the kernel that ran
  std::string error;       // non-empty if the call threw (the case then fails)
  double max_abs_err = 0;  // over elements finite in both
  double rel_fro_err = 0;  // ||out - ref||_F / ||ref||_F over elements finite in both
  double lse_max_abs_err = 0;
  std::int64_t nan_mismatch = 0;  // elements (out and lse) NaN in one, not the other
  std::int64_t inf_mismatch = 0;  // elements infinite in one, not the same in the other
  bool guard_intact = true;       // sentinel around and between output elements untouched
  bool fully_written = true;      // no output element still holds the poison pattern
  double tol_rel_fro = 0, tol_abs = 0, tol_lse = 0;  // the bounds this result is held to
  bool pass = false;
  std::string summary() const;  // one line
};

struct CaseReport {
  std::string description;  // AttentionCase::describe()
  // What a naive computation in the case's dtype achieves against the f64
  // reference; the tolerances are derived from these (see tolerances()).
  double naive_rel_fro = 0, naive_max_abs = 0, naive_lse_abs = 0;
  std::vector<BackendResult> results;  // one per available backend
  bool all_pass() const;
  std::string summary() const;  // multi-line: description + one line per backend
};

// A kernel under test that is not in the registry (a prototype, or a
// deliberately broken one for the harness's own tests): called exactly like
// softmax_attention_out, with tensors on `device`, and checked like a backend.
struct ExtraRunner {
  std::string name;
  Device device = Device::cpu();
  std::function<void(const Tensor& out, const Tensor& q, const Tensor& k, const Tensor& v,
                     const AttentionOptions& opt, const Tensor& lse)>
      run;
};

// The bounds a correct attention result is held to against the f64
// reference, by the harness's one rule: 3x the error that a naive
// computation in q's dtype (the reference kernel with its accumulator in
// that dtype; f16/bf16 in f32, output rounded) makes on this very problem,
// plus a floor (1e-6 relative for f32, 1e-12 for f64, one ulp for f16/bf16).
// The bound grows with N where rounding does, so correct long-N results
// pass, while indexing or masking bugs (errors of order 1) still fail.
// run_attention_case holds every backend to it; `strata attention` too.
struct AttentionTolerance {
  double rel_fro = 0, max_abs = 0, lse_abs = 0;                    // the bounds
  double naive_rel_fro = 0, naive_max_abs = 0, naive_lse_abs = 0;  // what the naive run achieved
};
// q, k, v (and opt.mask): host tensors in the problem's dtype; ref_out (and
// ref_lse, when defined) the f64 reference's output (and lse) for them, in
// logical order. Needs as much memory as the reference backend does; the lse
// bounds stay 0 when ref_lse is undefined.
AttentionTolerance attention_tolerance(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const AttentionOptions& opt, const Tensor& ref_out,
                                       const Tensor& ref_lse = Tensor());

// Runs the case on every compiled and available backend, then on `extra`.
CaseReport run_attention_case(const AttentionCase& c, const std::vector<ExtraRunner>& extra = {});

// The case's inputs as the harness builds them on the host (for tests that
// want to poke at them directly). mask is undefined when the case has none.
struct AttentionInputs {
  Tensor q, k, v, mask;
  AttentionOptions options;
};
AttentionInputs make_attention_inputs(const AttentionCase& c, Device dev = Device::cpu());

// How far `got` is from `ref` (same number of elements, compared in logical
// order): errors over elements finite in both; a NaN on one side only, or
// infinities that differ, count as mismatches (equal infinities agree, as
// an empty row's lse = -inf does). rel_fro = ||got - ref||_F / ||ref||_F.
struct ErrorStats {
  double max_abs = 0, rel_fro = 0;
  std::int64_t nan_mismatch = 0, inf_mismatch = 0;
};
ErrorStats compare_values(const std::vector<double>& got, const std::vector<double>& ref);
// Any devices and dtypes; throws strata::Error if the element counts differ.
ErrorStats compare_values(const Tensor& got, const Tensor& ref);

}  // namespace strata::harness
