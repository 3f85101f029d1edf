// Descriptors of tril / triu (every dtype, diagonals below, on and above the
// main one, square, wide and tall matrices, in place, and one large enough
// to be split over cpu threads mid-row), dropout (several p, in place, the
// p = 0 copy and the p = 1 zeros) and topk (values and indices, largest and
// smallest, the last dim and a middle one, k = n, tied values, long rows).
#include "op_catalog.hpp"
#include "strata/elementwise.hpp"
#include "strata/select.hpp"

namespace strata::harness::detail {
namespace {

using TriOut = void (*)(const Tensor&, const Tensor&, std::int64_t, const OpOptions&);

void add_tri(std::vector<OpDescriptor>& v) {
  const struct {
    const char* op;
    TriOut fn;
    Shape shape;
    std::int64_t diagonal;
  } cases[] = {
      {"tril", &tril_out, {3, 5, 7}, 0},     {"tril", &tril_out, {4, 6}, -2},
      {"tril", &tril_out, {2, 9, 4}, 2},     {"triu", &triu_out, {3, 5, 7}, 0},
      {"triu", &triu_out, {2, 4, 9}, -1},    {"triu", &triu_out, {7, 5}, 3},
      {"tril", &tril_out, {3, 130, 257}, 5}, {"triu", &triu_out, {3, 130, 257}, -7},
  };
  for (const auto& c : cases) {
    OpDescriptor d = descriptor(
        std::string(c.op) + " " + shape_str(c.shape) + " diagonal=" + std::to_string(c.diagonal),
        "tri", c.op);
    d.inputs = {input("x", c.shape)};
    d.dtypes = every_dtype();
    const TriOut fn = c.fn;
    const std::int64_t diagonal = c.diagonal;
    d.run = [fn, diagonal](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], diagonal, o);
    };
    v.push_back(d);
  }
  OpDescriptor d = descriptor("tril in place diagonal=1", "tri", "tril");
  d.registry_ops = {"cast", "tril"};
  d.inputs = {input("x", {3, 6, 5})};
  d.dtypes = every_dtype();
  d.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
    copy_(out, in[0], o);
    tril_out(out, out, 1, o);
  };
  v.push_back(d);
}

void add_dropout(std::vector<OpDescriptor>& v) {
  const struct {
    const char* name;
    const char* registry_op;
    Shape shape;
    double p;
    bool in_place;
  } cases[] = {
      {"dropout p=0.3", "dropout", {4, 6, 33}, 0.3, false},
      {"dropout p=0.5 (several cpu threads)", "dropout", {64, 1031}, 0.5, false},
      {"dropout p=0.9 in place", "dropout", {5, 17}, 0.9, true},
      {"dropout p=0 (a copy)", "cast", {4, 9}, 0.0, false},
      {"dropout p=1 (zeros)", "dropout", {4, 9}, 1.0, false},
  };
  for (const auto& c : cases) {
    OpDescriptor d = descriptor(c.name, "dropout", c.registry_op);
    if (c.in_place) d.registry_ops = {"cast", c.registry_op};
    d.inputs = {input("x", c.shape)};
    const double p = c.p;
    const bool in_place = c.in_place;
    d.run = [p, in_place](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      if (in_place) copy_(out, in[0], o);
      dropout_out(out, in_place ? out : in[0], p, 0x5eed, true, o);
    };
    v.push_back(d);
  }
}

void add_topk(std::vector<OpDescriptor>& v) {
  const struct {
    const char* name;
    Shape shape;
    std::int64_t k;
    int dim;
    bool largest, want_indices;
    Fill fill;
  } cases[] = {
      {"topk k=5", {4, 6, 33}, 5, -1, true, false, Fill::permutation},
      {"topk k=3 dim=1 smallest", {4, 6, 33}, 3, 1, false, false, Fill::permutation},
      {"topk k=n", {5, 12}, 12, -1, true, false, Fill::permutation},
      {"topk indices k=5", {4, 6, 33}, 5, -1, true, true, Fill::permutation},
      {"topk indices k=4 dim=0 smallest", {9, 3, 5}, 4, 0, false, true, Fill::permutation},
      {"topk indices k=6 (ties)", {4, 6, 33}, 6, -1, true, true, Fill::ties},
      {"topk indices k=6 smallest (ties)", {4, 6, 33}, 6, -1, false, true, Fill::ties},
      {"topk k=20 (rows of 1500)", {3, 1500}, 20, -1, true, false, Fill::normal},
      {"topk k=7 (rows of 4099)", {3, 4099}, 7, -1, true, false, Fill::normal},
      {"topk indices k=9 smallest (rows of 4099)", {2, 4099}, 9, -1, false, true, Fill::ties},
  };
  for (const auto& c : cases) {
    OpDescriptor d = descriptor(c.name, "topk", "topk");
    // Distinct integers in [0, 256): exact in bf16 too; a row never holds
    // two equal ones (they repeat only every 256 elements).
    d.inputs = {input("x", c.shape, c.fill)};
    d.inputs[0].range = 256;
    const std::int64_t k = c.k;
    const int dim = c.dim;
    const bool largest = c.largest, want_indices = c.want_indices;
    d.output = [k, dim, want_indices](const std::vector<Tensor>& in, DType dt) {
      Shape s = in[0].shape();
      s[static_cast<std::size_t>(dim < 0 ? dim + static_cast<int>(s.size()) : dim)] = k;
      return OpOutput{s, want_indices ? DType::i64 : dt};
    };
    d.run = [k, dim, largest, want_indices](const Tensor& out, const std::vector<Tensor>& in,
                                            const OpOptions& o) {
      // The other output: a fresh tensor on the device.
      const Tensor other =
          Tensor::empty(out.shape(), want_indices ? in[0].dtype() : DType::i64, out.device());
      if (want_indices)
        topk_out(other, out, in[0], k, dim, largest, true, o);
      else
        topk_out(out, other, in[0], k, dim, largest, true, o);
    };
    v.push_back(d);
  }
}

}  // namespace

void add_select_descriptors(std::vector<OpDescriptor>& v) {
  add_tri(v);
  add_dropout(v);
  add_topk(v);
}

}  // namespace strata::harness::detail
