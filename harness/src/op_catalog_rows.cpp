// Descriptors of the row ops: reductions and softmax over a middle dim and
// the last, the norms with and without weight/bias, embedding with i32 and
// i64 ids, index_copy_ along an outer dim, the row dim and dim 0, rotary in
// both styles with partial rotary dims, on a slice of a fused QKV buffer and
// in place, concat, cross_entropy with its backward (the backward kernels
// of softmax, log_softmax and the norms: op_catalog_rows_backward.cpp).
#include "op_catalog.hpp"
#include "strata/concat.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/elementwise.hpp"
#include "strata/embedding.hpp"
#include "strata/index_copy.hpp"
#include "strata/norm.hpp"
#include "strata/reduce.hpp"
#include "strata/rotary.hpp"

namespace strata::harness::detail {
namespace {

using ReduceOut = void (*)(const Tensor&, const Tensor&, int, bool, const OpOptions&);
using SoftmaxOut = void (*)(const Tensor&, const Tensor&, int, const OpOptions&);

// x [B, T, (Hq + 2 Hkv) d] as a fused QKV projection leaves it -> its k part
// viewed as [B, Hkv, T, d], built with strides only (works on any layout of x).
Tensor k_of_fused(const Tensor& qkv, std::int64_t H, std::int64_t d) {
  const Tensor k = qkv.narrow(-1, H * d, H * d);  // [B, T, H d]
  return k
      .as_strided({k.size(0), k.size(1), H, d},
                  {k.stride(0), k.stride(1), d * k.stride(2), k.stride(2)}, k.offset())
      .transpose(1, 2);
}

// cross_entropy: logits [4, 5, 37] against targets drawn from every class,
// and from [0, 4) with ignore_index 1 (about a quarter of the rows ignored);
// long rows of 9001 (several tiles on cuda, several blocks on the cpu); and
// the backward kernel by itself, adding into a grad_logits that holds
// values (its lse drawn at random: the formula holds for any).
void add_cross_entropy_descriptors(std::vector<OpDescriptor>& v) {
  using R = CrossEntropyOptions::Reduction;
  const struct {
    const char* name;
    R reduction;
    DType target_dt;
    std::int64_t range, ignore;
    Shape logits;
  } cases[] = {
      {"cross_entropy mean", R::mean, DType::i64, 37, -100, {4, 5, 37}},
      {"cross_entropy mean (ignore_index 1)", R::mean, DType::i32, 4, 1, {4, 5, 37}},
      {"cross_entropy sum (ignore_index 1)", R::sum, DType::i64, 4, 1, {4, 5, 37}},
      {"cross_entropy none", R::none, DType::i32, 37, -100, {4, 5, 37}},
      {"cross_entropy none (ignore_index 1)", R::none, DType::i64, 4, 1, {4, 5, 37}},
      {"cross_entropy mean (long rows)", R::mean, DType::i64, 9001, -100, {3, 9001}},
  };
  for (const auto& c : cases) {
    CrossEntropyOptions ce;
    ce.reduction = c.reduction;
    ce.ignore_index = c.ignore;
    Shape rows = c.logits;
    rows.pop_back();
    OpDescriptor d = descriptor(c.name, "cross_entropy", "cross_entropy");
    d.inputs = {input("logits", c.logits),
                input_of("target", rows, c.target_dt, Fill::ids, c.range)};
    const bool none = c.reduction == R::none;
    d.output = [none](const std::vector<Tensor>& in, DType dt) {
      return OpOutput{none ? in[1].shape() : Shape{}, dt == DType::f64 ? DType::f64 : DType::f32};
    };
    d.run = [ce](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      cross_entropy_out(out, in[0], in[1], ce, o);
    };
    d.tolerance = row_growth(static_cast<double>(c.logits.back() + shape_numel(rows)));
    v.push_back(d);
  }
  OpDescriptor d;
  d.name = "cross_entropy_backward (accumulate, ignore_index 1)";
  d.family = "cross_entropy backward";
  d.registry_ops = {"cast", "cross_entropy_backward"};
  d.inputs = {input("grad_logits", {4, 5, 37}), input("grad", {4, 5}), input("logits", {4, 5, 37}),
              input_of("target", {4, 5}, DType::i64, Fill::ids, 4), input("lse", {4, 5})};
  d.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
    copy_(out, in[0], o);
    const DType sdt = in[2].dtype() == DType::f64 ? DType::f64 : DType::f32;
    cross_entropy_backward_out(out, in[1], in[2], in[3], cast(in[4], sdt, o), 1, true, o);
  };
  d.tolerance = row_growth(4);
  v.push_back(d);
}

}  // namespace

void add_row_descriptors(std::vector<OpDescriptor>& v) {
  add_cross_entropy_descriptors(v);
  const Shape xs = {4, 6, 33};
  const struct {
    const char* name;
    ReduceOut fn;
  } reductions[] = {
      {"sum", &sum_out}, {"mean", &mean_out}, {"max", &max_out}, {"argmax", &argmax_out}};
  for (const auto& r : reductions) {
    for (const int dim : {0, 1, -1}) {
      const bool keepdim = dim == 1;  // with and without
      const ReduceOut fn = r.fn;
      const bool is_argmax = std::string(r.name) == "argmax";
      OpDescriptor d = descriptor(
          std::string(r.name) + " dim=" + std::to_string(dim) + (keepdim ? " keepdim" : ""),
          "reduce", r.name);
      d.inputs = {input("x", xs)};
      d.output = [dim, keepdim, is_argmax](const std::vector<Tensor>& in, DType dt) {
        Shape s = in[0].shape();
        const auto w = static_cast<std::size_t>(dim < 0 ? dim + static_cast<int>(s.size()) : dim);
        if (keepdim) {
          s[w] = 1;
        } else {
          s.erase(s.begin() + static_cast<std::ptrdiff_t>(w));
        }
        return OpOutput{s, is_argmax ? DType::i64 : dt};
      };
      d.run = [fn, dim, keepdim](const Tensor& out, const std::vector<Tensor>& in,
                                 const OpOptions& o) { fn(out, in[0], dim, keepdim, o); };
      d.tolerance = row_growth(static_cast<double>(xs[dim < 0 ? 2 : dim]));
      v.push_back(d);
    }
  }

  // Empty rows: sum 0, mean NaN (docs: reduce.hpp); the output is not empty.
  for (const auto& r : {std::pair<const char*, ReduceOut>{"sum", &sum_out},
                        std::pair<const char*, ReduceOut>{"mean", &mean_out}}) {
    const ReduceOut fn = r.second;
    OpDescriptor d = descriptor(std::string(r.first) + " over an empty dim", "reduce", r.first);
    d.inputs = {input("x", {3, 0, 4})};
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{3, 4}, dt}; };
    d.run = [fn](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      fn(out, in[0], 1, false, o);
    };
    v.push_back(d);
  }

  // Tied maxima: argmax must return the first index of the maximum.
  for (const int dim : {1, -1}) {
    OpDescriptor d =
        descriptor("argmax dim=" + std::to_string(dim) + " (ties)", "reduce", "argmax");
    d.inputs = {input("x", xs, Fill::ties)};
    d.output = [dim](const std::vector<Tensor>& in, DType) {
      Shape s = in[0].shape();
      s.erase(s.begin() + (dim < 0 ? dim + static_cast<int>(s.size()) : dim));
      return OpOutput{s, DType::i64};
    };
    d.run = [dim](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      argmax_out(out, in[0], dim, false, o);
    };
    v.push_back(d);
  }

  const struct {
    const char* name;
    SoftmaxOut fn;
  } softmaxes[] = {{"softmax", &softmax_out}, {"log_softmax", &log_softmax_out}};
  for (const auto& s : softmaxes) {
    for (const int dim : {1, -1}) {
      const SoftmaxOut fn = s.fn;
      OpDescriptor d =
          descriptor(std::string(s.name) + " dim=" + std::to_string(dim), "softmax", s.name);
      d.inputs = {input("x", xs)};
      d.run = [fn, dim](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
        fn(out, in[0], dim, o);
      };
      d.tolerance = row_growth(static_cast<double>(xs[dim < 0 ? 2 : dim]));
      v.push_back(d);
    }
  }

  const std::int64_t n = 48;
  for (const bool affine : {true, false}) {
    OpDescriptor d =
        descriptor(affine ? "layer_norm" : "layer_norm (no weight, no bias)", "norm", "layer_norm");
    d.inputs = {input("x", {4, 5, n})};
    if (affine) d.inputs.push_back(input("weight", {n}));
    if (affine) d.inputs.push_back(input("bias", {n}));
    d.run = [affine](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      layer_norm_out(out, in[0], affine ? in[1] : Tensor(), affine ? in[2] : Tensor(), 1e-5, o);
    };
    d.tolerance = row_growth(static_cast<double>(n));
    v.push_back(d);

    OpDescriptor r = descriptor(affine ? "rms_norm" : "rms_norm (no weight)", "norm", "rms_norm");
    r.inputs = {input("x", {4, 5, n})};
    if (affine) r.inputs.push_back(input("weight", {n}));
    r.run = [affine](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      rms_norm_out(out, in[0], affine ? in[1] : Tensor(), 1e-6, o);
    };
    r.tolerance = row_growth(static_cast<double>(n));
    v.push_back(r);
  }

  // The second size: a call past the cuda backward's scan (its sort by
  // id), with enough ids that many repeat.
  struct EmbeddingSize {
    const char* what;
    Shape ids;
    std::int64_t vocab, dim;
  };
  for (const EmbeddingSize& z :
       {EmbeddingSize{"", {3, 7}, 50, 24}, EmbeddingSize{", vocabulary 1500", {128, 5}, 1500, 8}})
    for (const DType id_dt : {DType::i32, DType::i64}) {
      OpDescriptor d = descriptor(
          std::string("embedding (") + std::string(dtype_name(id_dt)) + " ids" + z.what + ")",
          "embedding", "embedding");
      d.inputs = {input_of("ids", z.ids, id_dt, Fill::ids, z.vocab),
                  input("table", {z.vocab, z.dim})};
      d.output = [](const std::vector<Tensor>& in, DType dt) {
        Shape s = in[0].shape();
        s.push_back(in[1].size(1));
        return OpOutput{s, dt};
      };
      d.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
        embedding_out(out, in[0], in[1], o);
      };
      v.push_back(d);
    }

  // index_copy_: the output (dst) first takes the values of input "dst" by
  // copy_, then index_copy_ writes src's slices at distinct in-range indices
  // (a permutation subset, so no write races and the other slices keep
  // dst's values). The index input is [2, T] and row 0 is used, so that
  // every layout gives it a stride of its own (transposed: 2, negative: -1,
  // strided: 2) and broadcast (stride 0 along the unused dim) keeps its
  // values distinct. First: the KV-cache append ([B, Hkv, max_len, hd] at
  // dim 2), and a smaller one whose gradient case is also checked against
  // finite differences; then the indexed dim as the row (-1) and as the
  // outermost (0).
  const struct {
    const char* name;
    Shape dst;
    int dim;
    DType index_dt;
  } index_copies[] = {
      {"index_copy_ dim=2 (KV cache append)", {2, 3, 11, 16}, 2, DType::i64},
      {"index_copy_ dim=2 (small KV cache append)", {2, 2, 7, 8}, 2, DType::i64},
      {"index_copy_ dim=-1 (index along the row)", {4, 9}, -1, DType::i32},
      {"index_copy_ dim=0", {6, 4, 8}, 0, DType::i32},
  };
  for (const auto& c : index_copies) {
    const std::size_t w =
        static_cast<std::size_t>(c.dim < 0 ? c.dim + static_cast<int>(c.dst.size()) : c.dim);
    const std::int64_t n = c.dst[w], t = n / 2;  // 2t <= n distinct values
    Shape src = c.dst;
    src[w] = t;
    OpDescriptor d;
    d.name = c.name;
    d.family = "index_copy";
    d.registry_ops = {"cast", "index_copy"};
    d.inputs = {input("dst", c.dst), input_of("index", {2, t}, c.index_dt, Fill::permutation, n),
                input("src", src)};
    d.dtypes = every_dtype();
    const int dim = c.dim;
    d.run = [dim](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      copy_(out, in[0], o);
      index_copy_(out, dim, in[1].select(0, 0), in[2], o);
    };
    v.push_back(d);
  }

  // Rotary: positions in [0, 64); the f32 angle (docs/guide/ops.md) differs from
  // the f64 reference's by ~position * eps(f32), hence growth 64.
  constexpr std::int64_t kPos = 64;
  const struct {
    const char* name;
    RotaryStyle style;
    std::int64_t dims;
    DType pos_dt;
    Shape pos_shape;
  } rotaries[] = {
      {"rotary half", RotaryStyle::half, -1, DType::i64, {9}},
      {"rotary interleaved", RotaryStyle::interleaved, -1, DType::i32, {2, 1, 9}},
      {"rotary half partial (10 of 16)", RotaryStyle::half, 10, DType::i32, {9}},
      {"rotary interleaved partial (6 of 16)", RotaryStyle::interleaved, 6, DType::i64, {2, 3, 9}},
  };
  for (const auto& r : rotaries) {
    RotaryOptions ro;
    ro.style = r.style;
    ro.rotary_dims = r.dims;
    OpDescriptor d = descriptor(r.name, "rotary", "rotary");
    d.inputs = {input("x", {2, 3, 9, 16}),
                input_of("positions", r.pos_shape, r.pos_dt, Fill::positions, kPos)};
    d.run = [ro](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      rotary_out(out, in[0], in[1], ro, o);
    };
    d.tolerance = row_growth(kPos);
    v.push_back(d);
  }
  for (const RotaryStyle style : {RotaryStyle::half, RotaryStyle::interleaved}) {
    // k of a fused [B, T, (Hq + 2 Hkv) d] QKV buffer, Hq = Hkv = 3, d = 16, r = 12.
    RotaryOptions ro;
    ro.style = style;
    ro.rotary_dims = 12;
    OpDescriptor d;
    d.name = std::string("rotary ") + (style == RotaryStyle::half ? "half" : "interleaved") +
             " on the k slice of a fused QKV buffer";
    d.family = "rotary";
    d.registry_ops = {"rotary"};
    d.inputs = {input("qkv", {2, 9, 9 * 16}),
                input_of("positions", {9}, DType::i64, Fill::positions, kPos)};
    d.output = [](const std::vector<Tensor>&, DType dt) { return OpOutput{{2, 3, 9, 16}, dt}; };
    d.run = [ro](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      rotary_out(out, k_of_fused(in[0], 3, 16), in[1], ro, o);
    };
    d.tolerance = row_growth(kPos);
    v.push_back(d);
  }
  {
    // In place (out is x): the output view is first filled with x by copy_.
    RotaryOptions ro;
    ro.rotary_dims = 8;
    OpDescriptor d;
    d.name = "rotary half in place";
    d.family = "rotary";
    d.registry_ops = {"cast", "rotary"};
    d.inputs = {input("x", {3, 9, 16}),
                input_of("positions", {9}, DType::i32, Fill::positions, kPos)};
    d.run = [ro](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      copy_(out, in[0], o);
      rotary_out(out, out, in[1], ro, o);
    };
    d.tolerance = row_growth(kPos);
    v.push_back(d);
  }

  // Long rows (several warps or blocks per row on cuda, vector tails on the cpu).
  {
    const std::int64_t L = 4099;
    OpDescriptor s = descriptor("softmax dim=-1 (long rows)", "long rows", "softmax");
    s.inputs = {input("x", {3, L})};
    s.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      softmax_out(out, in[0], -1, o);
    };
    s.tolerance = row_growth(static_cast<double>(L));
    v.push_back(s);
    OpDescriptor sm = s;
    sm.name = "sum dim=-1 (long rows)";
    sm.registry_ops = {"sum"};
    sm.output = [](const std::vector<Tensor>& in, DType dt) {
      return OpOutput{{in[0].size(0)}, dt};
    };
    sm.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      sum_out(out, in[0], -1, false, o);
    };
    v.push_back(sm);
    OpDescriptor ln = s;
    ln.name = "layer_norm (long rows)";
    ln.registry_ops = {"layer_norm"};
    ln.inputs = {input("x", {3, L}), input("weight", {L}), input("bias", {L})};
    ln.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      layer_norm_out(out, in[0], in[1], in[2], 1e-5, o);
    };
    v.push_back(ln);
    OpDescriptor rn = s;
    rn.name = "rms_norm (long rows)";
    rn.registry_ops = {"rms_norm"};
    rn.inputs = {input("x", {3, L}), input("weight", {L})};
    rn.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      rms_norm_out(out, in[0], in[1], 1e-6, o);
    };
    v.push_back(rn);
    OpDescriptor ad = descriptor("add (long rows)", "long rows", "add");
    ad.inputs = {input("a", {3, L}), input("b", {3, L})};
    ad.run = [](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      add_out(out, in[0], in[1], o);
    };
    v.push_back(ad);
  }

  for (const int dim : {1, -1}) {
    OpDescriptor d = descriptor("concat dim=" + std::to_string(dim), "concat", "cast");
    if (dim == 1) {
      d.inputs = {input("a", {3, 4, 5}), input("b", {3, 2, 5}), input("c", {3, 7, 5})};
    } else {
      d.inputs = {input("a", {4, 3}), input("b", {4, 6}), input("c", {4, 1})};
    }
    d.dtypes = every_dtype();
    d.output = [dim](const std::vector<Tensor>& in, DType dt) {
      Shape s = in[0].shape();
      const auto w = static_cast<std::size_t>(dim < 0 ? dim + static_cast<int>(s.size()) : dim);
      s[w] = 0;
      for (const Tensor& t : in) s[w] += t.size(static_cast<int>(w));
      return OpOutput{s, dt};
    };
    d.run = [dim](const Tensor& out, const std::vector<Tensor>& in, const OpOptions& o) {
      concat_out(out, in, dim, o);
    };
    v.push_back(d);
  }
  add_row_backward_descriptors(v);
}

}  // namespace strata::harness::detail
