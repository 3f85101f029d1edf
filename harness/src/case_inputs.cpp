// Builds the inputs of an AttentionCase: seeded values written into flat
// host buffers at the positions the layout gives. Buffer elements that no
// view covers hold NaN (float) so a kernel that reads outside its view
// produces NaN, which the comparison reports.
#include "case_inputs.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "strata/detail/enum_names.hpp"

namespace strata::harness {

std::string_view layout_name(Layout l) {
  static constexpr std::string_view kNames[] = {"contiguous", "transposed",   "sliced",
                                                "fused_qkv",  "strided_cols", "broadcast",
                                                "negative"};  // declaration order
  return strata::detail::enum_name(l, kNames);
}

const std::vector<Layout>& all_layouts() {
  static const std::vector<Layout> all = {
      Layout::contiguous,   Layout::transposed, Layout::sliced,  Layout::fused_qkv,
      Layout::strided_cols, Layout::broadcast,  Layout::negative};
  return all;
}

std::string_view mask_name(MaskKind m) {
  static constexpr std::string_view kNames[] = {"none", "bool_full", "float_full", "bool_bcast",
                                                "float_bcast"};  // declaration order
  return strata::detail::enum_name(m, kNames);
}

AttentionCase batched_case(std::int64_t M, std::int64_t N, std::int64_t d, std::int64_t dv,
                           DType dt, std::uint64_t seed) {
  AttentionCase c;
  c.batch = {2};
  c.Hq = 2;
  c.Hkv = 2;
  c.M = M;
  c.N = N;
  c.d = d;
  c.dv = dv;
  c.dtype = dt;
  c.seed = seed;
  return c;
}

std::string AttentionCase::describe() const {
  std::ostringstream os;
  os << "batch=" << shape_str(batch) << " Hq=" << Hq << " Hkv=" << Hkv << " M=" << M << " N=" << N
     << " d=" << d << " dv=" << dv << (q_2d ? " q2d" : "") << ' ' << dtype_name(dtype)
     << " layout=" << layout_name(layout) << " causal="
     << (causal == Causal::none           ? "none"
         : causal == Causal::bottom_right ? "bottom_right"
                                          : "top_left");
  if (window) {
    os << " window=(" << window->first << ',' << window->second << ')'
       << (window_top_left ? "tl" : "br");
  }
  os << " scale=";
  if (scale) {
    os << *scale;
  } else {
    os << "default";
  }
  os << " mask=" << mask_name(mask) << (masked_rows ? " masked_rows" : "")
     << (with_lse ? " lse" : "") << " input_scale=" << input_scale << " seed=" << seed;
  return os.str();
}

namespace detail {

Tensor host_tensor(const std::vector<double>& values, DType dt) {
  const auto n = static_cast<std::int64_t>(values.size());
  // At least one element, so that even an empty view has a storage to point at.
  Tensor t = Tensor::empty({std::max<std::int64_t>(n, 1)}, dt, Device::cpu());
  for (std::int64_t i = 0; i < n; ++i) {
    store_from_double(static_cast<char*>(t.data_ptr()) + i * itemsize(dt), dt, values[i]);
  }
  return t;
}

std::vector<double> randn_values(std::int64_t n, std::uint64_t seed) {
  if (n == 0) return {};
  return Tensor::randn({n}, seed, DType::f64).to_vector<double>();
}
std::vector<double> rand_values(std::int64_t n, std::uint64_t seed) {
  if (n == 0) return {};
  return Tensor::rand({n}, seed, DType::f64).to_vector<double>();
}

std::uint64_t sub_seed(std::uint64_t seed, int which) {
  return seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(which) * 0xD1B54A32D192ED03ull;
}

Tensor contiguous_copy(const Tensor& t, DType dt) {
  Tensor flat = host_tensor(t.to_vector<double>(), dt);
  return flat.as_strided(t.shape(), row_major_strides(t.shape()), 0);
}

Tensor view_of(const BufferView& bv, const std::vector<Tensor>& buffers) {
  return buffers[bv.buffer].as_strided(bv.spec.shape, bv.spec.strides, bv.spec.offset);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Writes seeded N(0, 1) * mul values at the view's logical elements.
void fill_view(std::vector<double>& buf, const ViewSpec& s, std::uint64_t seed, double mul) {
  const std::vector<std::int64_t> pos = positions(s);
  const std::vector<double> vals = randn_values(static_cast<std::int64_t>(pos.size()), seed);
  for (std::size_t i = 0; i < pos.size(); ++i) buf[pos[i]] = vals[i] * mul;
}

}  // namespace

CaseInputs plan_case_inputs(const AttentionCase& c) {
  check(!c.q_2d || (c.batch.empty() && c.Hq == 1 && c.Hkv == 1), "harness",
        "a q_2d case needs no batch dims and Hq == Hkv == 1: ", c.describe());
  CaseInputs in;
  in.layout = c.layout;
  if (c.layout == Layout::fused_qkv && (c.q_2d || c.M != c.N || c.d != c.dv)) {
    in.layout = Layout::sliced;
  }

  auto full = [&](std::int64_t h, std::int64_t rows, std::int64_t cols) {
    Shape s = c.q_2d ? Shape{} : c.batch;
    if (!c.q_2d) s.push_back(h);
    s.insert(s.end(), {rows, cols});
    return s;
  };
  const Shape qs = full(c.Hq, c.M, c.d), ks = full(c.Hkv, c.N, c.d), vs = full(c.Hkv, c.N, c.dv);
  in.out_shape = full(c.Hq, c.M, c.dv);
  in.lse_shape = in.out_shape;
  in.lse_shape.pop_back();

  if (in.layout == Layout::fused_qkv) {
    // One [batch..., M, (Hq + 2 Hkv) d] buffer, as a fused QKV projection
    // leaves it; q, k, v are head-interleaved column ranges of it.
    const std::int64_t W = (c.Hq + 2 * c.Hkv) * c.d;
    Shape buf_shape = c.batch;
    buf_shape.insert(buf_shape.end(), {c.M, W});
    const Shape bst = row_major_strides(buf_shape);
    auto spec = [&](const Shape& s, std::int64_t col0) {
      Shape st(bst.begin(), bst.end() - 2);
      st.insert(st.end(), {c.d, W, 1});
      return ViewSpec{s, st, col0, shape_numel(buf_shape)};
    };
    in.q = {0, spec(qs, 0)};
    in.k = {0, spec(ks, c.Hq * c.d)};
    in.v = {0, spec(vs, (c.Hq + c.Hkv) * c.d)};
    std::vector<double> buf(static_cast<std::size_t>(shape_numel(buf_shape)), kNaN);
    fill_view(buf, in.q.spec, sub_seed(c.seed, 0), c.input_scale);
    fill_view(buf, in.k.spec, sub_seed(c.seed, 1), 1.0);
    fill_view(buf, in.v.spec, sub_seed(c.seed, 2), 1.0);
    in.buffers.push_back(host_tensor(buf, c.dtype));
  } else {
    const std::pair<const Shape*, detail::Role> parts[] = {
        {&qs, Role::q}, {&ks, Role::k}, {&vs, Role::v}};
    BufferView* views[] = {&in.q, &in.k, &in.v};
    for (int i = 0; i < 3; ++i) {
      ViewSpec s = make_spec(*parts[i].first, in.layout, parts[i].second);
      // In the broadcast layout v is also handed over without its batch dims,
      // so the front end's implicit broadcasting is covered too.
      if (in.layout == Layout::broadcast && i == 2 && s.shape.size() > 3) {
        const std::size_t nb = s.shape.size() - 3;
        s.shape.erase(s.shape.begin(), s.shape.begin() + nb);
        s.strides.erase(s.strides.begin(), s.strides.begin() + nb);
      }
      std::vector<double> buf(static_cast<std::size_t>(s.buffer_numel), kNaN);
      fill_view(buf, s, sub_seed(c.seed, i), i == 0 ? c.input_scale : 1.0);
      *views[i] = {i, s};
      in.buffers.push_back(host_tensor(buf, c.dtype));
    }
  }

  MaskKind mk = c.mask;
  if (c.masked_rows && mk == MaskKind::none) mk = MaskKind::bool_full;
  if (mk != MaskKind::none) {
    const Shape target = full(c.Hq, c.M, c.N);
    const bool is_bool = mk == MaskKind::bool_full || mk == MaskKind::bool_bcast;
    ViewSpec s;
    switch (mk) {
      case MaskKind::bool_full:
      case MaskKind::float_full:
        s = make_spec(target, in.layout == Layout::broadcast ? Layout::contiguous : in.layout,
                      Role::mask);
        break;
      case MaskKind::bool_bcast:  // [M, N] stored transposed
        s = make_spec({c.M, c.N}, Layout::transposed, Role::mask);
        break;
      case MaskKind::float_bcast:  // [Hq, M, N], head stride 0, column step 2
        if (c.q_2d) {
          s = make_spec({c.M, c.N}, Layout::strided_cols, Role::mask);
        } else {
          s = make_spec({1, c.M, c.N}, Layout::strided_cols, Role::mask);
          s.shape[0] = c.Hq;
          s.strides[0] = 0;
        }
        break;
      case MaskKind::none:
        break;
    }
    const std::vector<std::int64_t> pos = positions(s);
    const auto n = static_cast<std::int64_t>(pos.size());
    const std::vector<double> u = rand_values(n, sub_seed(c.seed, 3));
    const std::vector<double> g = randn_values(n, sub_seed(c.seed, 4));
    std::vector<double> buf(static_cast<std::size_t>(s.buffer_numel), is_bool ? 0.0 : kNaN);
    const std::int64_t N = std::max<std::int64_t>(c.N, 1);
    for (std::int64_t e = 0; e < n; ++e) {
      const std::int64_t row = (e / N) % std::max<std::int64_t>(c.M, 1);
      const bool dead = c.masked_rows && row % 4 == 1;
      if (is_bool) {
        buf[pos[e]] = !dead && u[e] < 0.7 ? 1.0 : 0.0;
      } else {
        buf[pos[e]] = dead || u[e] < 0.15 ? -kInf : g[e];
      }
    }
    in.mask = BufferView{static_cast<int>(in.buffers.size()), s};
    in.buffers.push_back(host_tensor(buf, is_bool ? DType::boolean : c.dtype));
  }

  in.options.scale = c.scale;
  in.options.causal = c.causal;
  in.options.window = c.window;
  in.options.window_top_left = c.window_top_left;
  return in;
}

}  // namespace detail

AttentionInputs make_attention_inputs(const AttentionCase& c, Device dev) {
  const detail::CaseInputs in = detail::plan_case_inputs(c);
  std::vector<Tensor> bufs;
  for (const Tensor& b : in.buffers) bufs.push_back(b.to(dev));
  AttentionInputs r;
  r.q = detail::view_of(in.q, bufs);
  r.k = detail::view_of(in.k, bufs);
  r.v = detail::view_of(in.v, bufs);
  if (in.mask) r.mask = detail::view_of(*in.mask, bufs);
  r.options = in.options;
  r.options.mask = r.mask;
  return r;
}

}  // namespace strata::harness
