// reference kernels of the row ops (reductions, softmax, norms, embedding,
// rotary, index_copy, cross_entropy and its backward): a plain odometer over the outer dims, every
// value read as f64, each formula written out in f64 (independently of the cpu and cuda kernels),
// the result rounded once to the output's dtype (index_copy, a pure copy of any dtype, moves each
// element's bytes). Operand layout and parameters: docs/guide/ops.md, "Row ops".
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "reference/operand_access.hpp"
#include "reference/row_walk.hpp"
#include "strata/error.hpp"
#include "strata/iter_args.hpp"
#include "strata/registry.hpp"

namespace strata::reference {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An integer operand's element, exactly (ids and positions: i32 or i64).
std::int64_t load_int(const Operand& o, std::int64_t off) {
  if (o.dtype == DType::i32) return static_cast<const std::int32_t*>(o.data)[off];
  return static_cast<const std::int64_t*>(o.data)[off];
}

// ---- reductions: out has stride 0 along the row, so element 0 is its slot.
void sum(const IterArgs& a) {
  for_each_row(a, [&](const Row& r) {
    double s = 0;
    for (std::int64_t j = 0; j < r.n; ++j) s += load(a.op[1], r.at(1, j));
    store(a.op[0], r.off[0], s);
  });
}

void mean(const IterArgs& a) {
  for_each_row(a, [&](const Row& r) {
    double s = 0;
    for (std::int64_t j = 0; j < r.n; ++j) s += load(a.op[1], r.at(1, j));
    store(a.op[0], r.off[0], s / static_cast<double>(r.n));
  });
}

// Index of the first maximum, a NaN counting as larger than anything.
std::int64_t argmax_of(const IterArgs& a, const Row& r) {
  std::int64_t best = 0;
  double m = load(a.op[1], r.at(1, 0));
  for (std::int64_t j = 1; j < r.n && !std::isnan(m); ++j) {
    const double v = load(a.op[1], r.at(1, j));
    if (std::isnan(v) || v > m) {
      m = v;
      best = j;
    }
  }
  return best;
}

void max(const IterArgs& a) {
  for_each_row(
      a, [&](const Row& r) { store(a.op[0], r.off[0], load(a.op[1], r.at(1, argmax_of(a, r)))); });
}

void argmax(const IterArgs& a) {
  for_each_row(
      a, [&](const Row& r) { store(a.op[0], r.off[0], static_cast<double>(argmax_of(a, r))); });
}

// The largest x (op[1]) of row r, or NaN when the row holds one: the shift
// of softmax and of cross_entropy's logsumexp.
double max_or_nan(const IterArgs& a, const Row& r) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < r.n; ++j) {
    const double v = load(a.op[1], r.at(1, j));
    if (std::isnan(v)) return kNaN;
    if (v > m) m = v;
  }
  return m;
}

// ---- softmax: x - max, so that exp never overflows; a row of -inf gives
// -inf - -inf = NaN everywhere, a NaN anywhere gives NaN everywhere.
template <bool Log>
void softmax(const IterArgs& a) {
  for_each_row(a, [&](const Row& r) {
    const double m = max_or_nan(a, r);
    double s = 0;
    for (std::int64_t j = 0; j < r.n; ++j) s += std::exp(load(a.op[1], r.at(1, j)) - m);
    const double log_s = std::log(s);
    for (std::int64_t j = 0; j < r.n; ++j) {
      const double z = load(a.op[1], r.at(1, j)) - m;
      store(a.op[0], r.at(0, j), Log ? z - log_s : std::exp(z) / s);
    }
  });
}

// ---- norms: two-pass statistics in f64.
void layer_norm(const IterArgs& a) {
  const double eps = a.scalar[0];
  const Operand &w = a.op[2], &b = a.op[3];
  for_each_row(a, [&](const Row& r) {
    double s = 0;
    for (std::int64_t j = 0; j < r.n; ++j) s += load(a.op[1], r.at(1, j));
    const double mu = s / static_cast<double>(r.n);
    double q = 0;
    for (std::int64_t j = 0; j < r.n; ++j) {
      const double c = load(a.op[1], r.at(1, j)) - mu;
      q += c * c;
    }
    const double inv = 1.0 / std::sqrt(q / static_cast<double>(r.n) + eps);
    for (std::int64_t j = 0; j < r.n; ++j) {
      double y = (load(a.op[1], r.at(1, j)) - mu) * inv;
      if (w.data != nullptr) y *= load(w, r.at(2, j));
      if (b.data != nullptr) y += load(b, r.at(3, j));
      store(a.op[0], r.at(0, j), y);
    }
  });
}

void rms_norm(const IterArgs& a) {
  const double eps = a.scalar[0];
  const Operand& w = a.op[2];
  for_each_row(a, [&](const Row& r) {
    double q = 0;
    for (std::int64_t j = 0; j < r.n; ++j) {
      const double v = load(a.op[1], r.at(1, j));
      q += v * v;
    }
    const double inv = 1.0 / std::sqrt(q / static_cast<double>(r.n) + eps);
    for (std::int64_t j = 0; j < r.n; ++j) {
      double y = load(a.op[1], r.at(1, j)) * inv;
      if (w.data != nullptr) y *= load(w, r.at(2, j));
      store(a.op[0], r.at(0, j), y);
    }
  });
}

// ---- embedding: every id checked before anything is written.
void embedding(const IterArgs& a) {
  const Operand& table = a.side;
  const std::int64_t vocab = table.shape[0];
  std::int64_t index = 0;
  for_each_row(a, [&](const Row& r) {
    const std::int64_t id = load_int(a.op[1], r.off[1]);
    if (id < 0 || id >= vocab)
      fail("embedding", "ids holds ", id, " at index ", index, ", outside [0, ", vocab, ")");
    ++index;
  });
  for_each_row(a, [&](const Row& r) {
    const std::int64_t id = load_int(a.op[1], r.off[1]);
    for (std::int64_t j = 0; j < r.n; ++j)
      store(a.op[0], r.at(0, j), load(table, id * table.strides[0] + j * table.strides[1]));
  });
}

// ---- embedding_backward: op[0] = table_grad [V, D], op[1] = grad [N, D],
// op[2] = ids [N]. Every id checked first; each touched row summed in f64
// in the order of ids, then added to table_grad (rounded once).
void embedding_backward(const IterArgs& a) {
  const Operand &tg = a.op[0], &g = a.op[1], &ids = a.op[2];
  const std::int64_t vocab = tg.shape[0], n = a.shape[0], d = a.shape[1];
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = load_int(ids, i * ids.strides[0]);
    if (id < 0 || id >= vocab)
      fail("embedding_backward", "ids holds ", id, " at index ", i, ", outside [0, ", vocab, ")");
  }
  std::vector<double> acc(static_cast<std::size_t>(vocab * d), 0.0);
  std::vector<char> touched(static_cast<std::size_t>(vocab), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = load_int(ids, i * ids.strides[0]);
    touched[static_cast<std::size_t>(id)] = 1;
    for (std::int64_t j = 0; j < d; ++j)
      acc[static_cast<std::size_t>(id * d + j)] += load(g, i * g.strides[0] + j * g.strides[1]);
  }
  for (std::int64_t v = 0; v < vocab; ++v) {
    if (!touched[static_cast<std::size_t>(v)]) continue;
    for (std::int64_t j = 0; j < d; ++j) {
      const std::int64_t at = v * tg.strides[0] + j * tg.strides[1];
      store(tg, at, load(tg, at) + acc[static_cast<std::size_t>(v * d + j)]);
    }
  }
}

// ---- index_copy: every index checked before anything is written, then
// each element copied as its bytes (any dtype, no conversion), rows in order.
void index_copy(const Operand& index, const IterArgs& a) {
  const std::int64_t size = a.iparam[1];
  for (std::int64_t i = 0; i < index.shape[0]; ++i) {
    const std::int64_t v = load_int(index, i * index.strides[0]);
    if (v < 0 || v >= size)
      fail("index_copy_", "index holds ", v, " at position ", i, ", outside [0, ", size, ")");
  }
  const std::size_t isz = itemsize(a.op[0].dtype);
  char* dst = static_cast<char*>(a.op[0].data);
  const char* src = static_cast<const char*>(a.op[1].data);
  for_each_row(a, [&](const Row& r) {
    for (std::int64_t j = 0; j < r.n; ++j) {
      const std::int64_t at = r.at(0, j) + load_int(a.op[2], r.at(2, j)) * a.iparam[0];
      std::memcpy(dst + at * static_cast<std::int64_t>(isz),
                  src + r.at(1, j) * static_cast<std::int64_t>(isz), isz);
    }
  });
}

void index_copy(const IterArgs& a) { index_copy(a.side, a); }

// ---- rotary: the angle as docs/guide/ops.md fixes it (f32 unless the data is
// f64), then cos, sin and the rotation in f64.
void rotary(const IterArgs& a) {
  const double theta = a.scalar[0];
  const std::int64_t rot = a.iparam[0];
  const bool interleaved = a.iparam[1] == 1;
  const bool f64 = a.op[1].dtype == DType::f64;
  for_each_row(a, [&](const Row& r) {
    const std::int64_t pos = load_int(a.op[2], r.off[2]);
    for (std::int64_t i = 0; i < rot / 2; ++i) {
      const double e = -2.0 * static_cast<double>(i) / static_cast<double>(rot);
      double angle;
      if (f64) {
        angle = static_cast<double>(pos) * std::pow(theta, e);
      } else {
        const auto inv_freq = static_cast<float>(std::pow(theta, e));
        angle = static_cast<float>(static_cast<float>(pos) * inv_freq);
      }
      const std::int64_t i0 = interleaved ? 2 * i : i;
      const std::int64_t i1 = interleaved ? 2 * i + 1 : i + rot / 2;
      const double x0 = load(a.op[1], r.at(1, i0)), x1 = load(a.op[1], r.at(1, i1));
      const double c = std::cos(angle), s = std::sin(angle);
      store(a.op[0], r.at(0, i0), x0 * c - x1 * s);
      store(a.op[0], r.at(0, i1), x1 * c + x0 * s);
    }
    for (std::int64_t j = rot; j < r.n; ++j) store(a.op[0], r.at(0, j), load(a.op[1], r.at(1, j)));
  });
}

// ---- cross_entropy and its backward: op[1] = logits, op[2] = target
// (stride 0 along the row), op[3] = the row's pair (lse and the value one
// element after it); iparam[0] = ignore_index. Every target checked first.
void check_targets(const char* op, const IterArgs& a) {
  const std::int64_t classes = a.row_len(), ignore = a.iparam[0];
  std::int64_t index = 0;
  for_each_row(a, [&](const Row& r) {
    const std::int64_t t = load_int(a.op[2], r.off[2]);
    if (t != ignore && (t < 0 || t >= classes))
      fail(op, "target holds ", t, " at index ", index, ", outside [0, ", classes,
           ") and not ignore_index (", ignore, ")");
    ++index;
  });
}

// op[0] = the row's loss (stride 0 along the row); the pair is (lse, valid).
// lse = max + log sum exp(x - max) in f64: -inf for a row of -inf, NaN
// when the row holds a NaN or +inf.
void cross_entropy(const IterArgs& a) {
  check_targets("cross_entropy", a);
  const std::int64_t ignore = a.iparam[0];
  for_each_row(a, [&](const Row& r) {
    const double m = max_or_nan(a, r);
    double lse = m;  // NaN for a row holding one, -inf for a row of -inf
    if (!std::isnan(m) && m != -std::numeric_limits<double>::infinity()) {
      double s = 0;
      for (std::int64_t j = 0; j < r.n; ++j) s += std::exp(load(a.op[1], r.at(1, j)) - m);
      lse = m + std::log(s);
    }
    const std::int64_t t = load_int(a.op[2], r.off[2]);
    store(a.op[3], r.off[3], lse);
    store(a.op[3], r.off[3] + 1, t == ignore ? 0.0 : 1.0);
    store(a.op[0], r.off[0], t == ignore ? 0.0 : lse - load(a.op[1], r.at(1, t)));
  });
}

// op[0] = grad_logits; the pair is (lse, g); iparam[1] = 1: add into op[0].
// d/dx_j = g (exp(x_j - lse) - [j == t]); 0 for an ignored row.
void cross_entropy_backward(const IterArgs& a) {
  check_targets("cross_entropy_backward", a);
  const std::int64_t ignore = a.iparam[0];
  const bool acc = a.iparam[1] != 0;
  for_each_row(a, [&](const Row& r) {
    const std::int64_t t = load_int(a.op[2], r.off[2]);
    const double lse = load(a.op[3], r.off[3]), g = load(a.op[3], r.off[3] + 1);
    for (std::int64_t j = 0; j < r.n; ++j) {
      double d = 0;
      if (t != ignore) d = g * (std::exp(load(a.op[1], r.at(1, j)) - lse) - (j == t ? 1.0 : 0.0));
      if (acc) d += load(a.op[0], r.at(0, j));
      store(a.op[0], r.at(0, j), d);
    }
  });
}

constexpr DType kFloat[] = {DType::f32, DType::f64, DType::f16, DType::bf16};

void add(Registry& r, const char* op, void (*run)(const IterArgs&)) {
  for (DType dt : kFloat)
    r.add_kernel<IterArgs>(op, "reference", dt, std::string("reference.rows.") + op, run);
}

}  // namespace

void register_reference_rows_backward(Registry& r);  // rows_backward_reference.cpp

void register_reference_rows(Registry& r) {
  add(r, "sum", &sum);
  add(r, "mean", &mean);
  add(r, "max", &max);
  add(r, "argmax", &argmax);
  add(r, "softmax", &softmax<false>);
  add(r, "log_softmax", &softmax<true>);
  add(r, "layer_norm", &layer_norm);
  add(r, "rms_norm", &rms_norm);
  register_reference_rows_backward(r);
  add(r, "embedding", &embedding);
  add(r, "embedding_backward", &embedding_backward);
  add(r, "rotary", &rotary);
  add(r, "cross_entropy", &cross_entropy);
  add(r, "cross_entropy_backward", &cross_entropy_backward);
  for (DType dt :
       {DType::f32, DType::f64, DType::f16, DType::bf16, DType::boolean, DType::i32, DType::i64})
    r.add_kernel<IterArgs>("index_copy", "reference", dt, "reference.rows.index_copy", &index_copy);
}

}  // namespace strata::reference
