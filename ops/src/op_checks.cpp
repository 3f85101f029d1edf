// Validation shared by every op front end (see detail/op_checks.hpp).
#include "strata/detail/op_checks.hpp"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace strata {
// The backends list (backends/register_backends.cpp) installs the registry's
// filler when it is linked. Every front end uses this file's checks, so this
// reference links the list into every program that calls an op.
void register_backends(Registry& r);
}  // namespace strata

namespace strata::detail {
namespace {
[[gnu::used]] void (*const kLinkBackendsList)(Registry&) = &register_backends;
}  // namespace

void check_defined(const char* op, const Tensor& t, const char* name) {
  STRATA_CHECK(t.defined(), op, name, " is an undefined tensor");
}

Device check_same_device(const char* op, std::initializer_list<Named> ts) {
  const Named* first = nullptr;
  for (const Named& n : ts) {
    if (!n.t->defined()) continue;
    if (first == nullptr) {
      first = &n;
      continue;
    }
    STRATA_CHECK(n.t->device() == first->t->device(), op, n.name, " is on ", n.t->device().str(),
                 " but ", first->name, " is on ", first->t->device().str());
  }
  return first ? first->t->device() : Device::cpu();
}

void check_dtype(const char* op, const Tensor& t, const char* name, DType want,
                 const char* want_from) {
  STRATA_CHECK(t.dtype() == want, op, name, " has dtype ", dtype_name(t.dtype()), " but ",
               want_from, " has ", dtype_name(want));
}

void check_floating(const char* op, const Tensor& t, const char* name) {
  STRATA_CHECK(is_floating(t.dtype()), op, name, " has dtype ", dtype_name(t.dtype()),
               " but must be a floating type (f32, f64, f16 or bf16)");
}

void check_integer(const char* op, const Tensor& t, const char* name) {
  STRATA_CHECK(is_integer(t.dtype()), op, name, " has dtype ", dtype_name(t.dtype()),
               " but must be i32 or i64");
}

void check_rank_at_least(const char* op, const Tensor& t, const char* name, int rank) {
  STRATA_CHECK(t.dim() >= rank, op, name, " must have at least ", rank, " dims but has shape ",
               shape_str(t.shape()));
}

bool has_internal_overlap(const Tensor& t) {
  std::pair<std::int64_t, std::int64_t> dims[kMaxDims];  // |stride|, size
  int n = 0;
  for (int i = 0; i < t.dim(); ++i) {
    const std::int64_t size = t.shape()[i];
    if (size == 0) return false;
    if (size > 1) dims[n++] = {std::abs(t.strides()[i]), size};
  }
  // Insertion sort: n <= 8, and std::sort on a fixed array trips GCC 12's
  // -Warray-bounds.
  for (int i = 1; i < n; ++i)
    for (int j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  std::int64_t span = 0;  // largest offset reachable with the smaller dims
  for (int i = 0; i < n; ++i) {
    if (dims[i].first <= span) return true;
    span += dims[i].first * (dims[i].second - 1);
  }
  return false;
}

void check_output(const char* op, const Tensor& out, const char* name, const Shape& shape, DType dt,
                  Device dev, const char* from) {
  check_defined(op, out, name);
  STRATA_CHECK(out.shape() == shape, op, name, " has shape ", shape_str(out.shape()),
               " but must be ", shape_str(shape));
  STRATA_CHECK(out.dtype() == dt, op, name, " has dtype ", dtype_name(out.dtype()), " but must be ",
               dtype_name(dt), " (from ", from, ")");
  STRATA_CHECK(out.device() == dev, op, name, " is on ", out.device().str(), " but ", from,
               " is on ", dev.str());
  STRATA_CHECK(!has_internal_overlap(out), op, name, " has strides ", shape_str(out.strides()),
               " under which several elements share memory");
}

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

void check_no_overlap(const char* op, const Tensor& out, const char* out_name,
                      std::initializer_list<Named> inputs, bool allow_same) {
  for (const Named& in : inputs) {
    if (!in.t->defined() || !may_overlap(out, *in.t)) continue;
    if (allow_same && same_view(out, *in.t)) continue;
    fail(op, out_name, " overlaps input ", in.name,
         " in memory; an output may only be exactly one of its inputs (in place) or disjoint "
         "from them");
  }
}

int wrap_dim(const char* op, int dim, int rank, const char* name) {
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  STRATA_CHECK(dim >= lo && dim <= hi, op, name, " ", dim, " is out of range for a ", rank,
               "-d tensor (expected ", lo, " to ", hi, ")");
  return dim < 0 ? dim + std::max(rank, 1) : dim;
}

}  // namespace strata::detail
