#include "npy_io.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

namespace strata::cli {
namespace {

// Reading does not go through xt::load_npy, for reasons checked against
// xtensor 0.24.3: load_npy<T> must be told the element type up front and
// throws on a mismatch (we only learn f32 / f64 / bool from the header), it
// does not detect a truncated data section (the buffer is left partly
// uninitialised), it reads a version-1.0 header length through a signed char
// (headers of 128 bytes or more, which numpy writes for long shapes, are
// misread), and it rejects headers whose keys are not in pprint order. The
// header is a tiny Python dict, so we parse it here and read the data straight
// into a buffer that the tensor then borrows. Writing does use xt::dump_npy.

struct Header {
  DType dtype = DType::f32;
  bool swap_bytes = false;
  bool fortran = false;
  Shape shape;
};

// A cursor over the header dict with error reporting that names the file.
class DictParser {
 public:
  DictParser(std::string text, std::string where) : s_(std::move(text)), where_(std::move(where)) {}

  [[noreturn]] void bad(const std::string& why) const {
    throw Error(where_ + ": malformed .npy header (" + why + "): " + printable());
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t')) ++i_;
  }
  bool peek(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) bad(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a string");
    const char q = s_[i_++];
    const std::size_t end = s_.find(q, i_);
    if (end == std::string::npos) bad("unterminated string");
    std::string out = s_.substr(i_, end - i_);
    i_ = end + 1;
    return out;
  }
  bool bool_literal() {
    skip_ws();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (s_.compare(i_, n, word) == 0) {
        i_ += n;
        return value;
      }
    }
    bad("fortran_order must be True or False");
  }
  Shape tuple_of_ints() {
    expect('(');
    Shape shape;
    while (!peek(')')) {
      skip_ws();
      std::int64_t v = 0;
      bool any = false;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        if (v > (std::numeric_limits<std::int64_t>::max() - 9) / 10) bad("dimension too large");
        v = v * 10 + (s_[i_++] - '0');
        any = true;
      }
      if (!any) bad("shape must be a tuple of non-negative integers");
      shape.push_back(v);
      if (!peek(',')) break;
      ++i_;
    }
    expect(')');
    return shape;
  }
  bool at_end() {
    skip_ws();
    return i_ == s_.size();
  }

 private:
  std::string printable() const {
    std::string t = s_.substr(0, 120);
    for (char& c : t)
      if (c < 32 || c > 126) c = '?';
    while (!t.empty() && t.back() == '?') t.pop_back();
    return t;
  }
  std::string s_;
  std::string where_;
  std::size_t i_ = 0;
};

void parse_descr(const std::string& descr, Header& h, const DictParser& p,
                 const std::string& where) {
  if (descr.size() < 2) p.bad("bad descr '" + descr + "'");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  if (order != '<' && order != '>' && order != '=' && order != '|') p.bad("bad byte order");
  if (kind == "f4") {
    h.dtype = DType::f32;
  } else if (kind == "f8") {
    h.dtype = DType::f64;
  } else if (kind == "f2") {
    h.dtype = DType::f16;
  } else if (kind == "i4") {
    h.dtype = DType::i32;
  } else if (kind == "i8") {
    h.dtype = DType::i64;
  } else if (kind == "b1") {
    h.dtype = DType::boolean;
  } else {
    const std::string what = kind == "O" ? " (Python objects)" : "";
    throw Error(where + ": dtype '" + descr + "'" + what +
                " is not supported (strata reads float32, float64, float16, int32, int64 and "
                "bool arrays)");
  }
  // x86 and ARM hosts are little-endian; '=' and '|' mean native or 1 byte.
  h.swap_bytes = order == '>' && h.dtype != DType::boolean;
}

Header parse_header(const std::string& text, const std::string& where) {
  DictParser p(text, where);
  Header h;
  bool have_descr = false, have_order = false, have_shape = false;
  p.expect('{');
  while (!p.peek('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      if (!p.peek('\'') && !p.peek('"'))
        throw Error(where +
                    ": structured dtypes are not supported (need float32, float64, float16, "
                    "int32, int64 or bool)");
      parse_descr(p.string_literal(), h, p, where);
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran = p.bool_literal();
      have_order = true;
    } else if (key == "shape") {
      h.shape = p.tuple_of_ints();
      have_shape = true;
    } else {
      p.bad("unexpected key '" + key + "'");
    }
    if (!p.peek(',')) break;
    p.expect(',');
  }
  p.expect('}');
  if (!p.at_end()) p.bad("text after the dict");
  if (!have_descr || !have_order || !have_shape)
    p.bad("needs the keys 'descr', 'fortran_order' and 'shape'");
  return h;
}

std::uint64_t read_le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void byteswap_all(unsigned char* p, std::size_t count, std::size_t isz) {
  for (std::size_t e = 0; e < count; ++e) std::reverse(p + e * isz, p + (e + 1) * isz);
}

std::string errno_text() { return std::strerror(errno); }

template <class T>
std::string npy_bytes_as(const Tensor& host) {
  std::vector<std::size_t> shape(host.shape().begin(), host.shape().end());
  const auto n = static_cast<std::size_t>(host.numel());
  // The tensor is contiguous row-major here, so this adaptor is dense; the
  // copy into an xarray is still made because xnpy writes an adaptor's raw
  // buffer whatever its strides; it costs one pass over the output.
  xt::xarray<T> dense =
      xt::adapt(static_cast<const T*>(host.data_ptr()), n, xt::no_ownership(), shape);
  return xt::dump_npy(dense);
}

}  // namespace

Tensor load_npy(const std::string& path, const std::string& what) {
  const std::string where = what + " '" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw Error(where + ": cannot open (" + errno_text() + ")");
  if (!S_ISREG(st.st_mode)) throw Error(where + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot open (" + errno_text() + ")");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);

  unsigned char pre[12] = {};
  in.read(reinterpret_cast<char*>(pre), 10);
  if (!in || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    throw Error(where + ": not a .npy file (no \\x93NUMPY magic)");
  const int major = pre[6];
  std::uint64_t header_len = 0;
  std::uint64_t prefix = 10;
  if (major == 1) {
    header_len = read_le(pre + 8, 2);
  } else if (major == 2 || major == 3) {
    in.read(reinterpret_cast<char*>(pre + 10), 2);
    if (!in) throw Error(where + ": truncated .npy header");
    header_len = read_le(pre + 8, 4);
    prefix = 12;
  } else {
    throw Error(where + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(pre[7]));
  }
  if (prefix + header_len > file_size) throw Error(where + ": truncated .npy header");
  std::string text(header_len, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_len));
  if (!in) throw Error(where + ": truncated .npy header");

  const Header h = parse_header(text, where);
  if (static_cast<int>(h.shape.size()) > kMaxDims)
    throw Error(where + ": has " + std::to_string(h.shape.size()) +
                " dimensions; strata tensors have at most " + std::to_string(kMaxDims));
  const std::size_t isz = itemsize(h.dtype);
  // The strides span every non-empty dim even when another dim is 0 (numpy
  // allows shape (0, 2^62, 4)): that product must fit too (found by fuzzing).
  std::int64_t span = 1;
  for (std::int64_t n : h.shape)
    if (__builtin_mul_overflow(span, std::max<std::int64_t>(n, 1), &span))
      throw Error(where + ": shape " + shape_str(h.shape) + " is too large");
  std::uint64_t count = 1;
  for (std::int64_t n : h.shape) {
    if (n != 0 && count > (std::uint64_t{1} << 48) / static_cast<std::uint64_t>(n))
      throw Error(where + ": shape " + shape_str(h.shape) + " is too large");
    count *= static_cast<std::uint64_t>(n);
  }
  const std::uint64_t nbytes = count * isz;
  const std::uint64_t have = file_size - prefix - header_len;
  if (have != nbytes)
    throw Error(where + ": " + (have < nbytes ? "truncated" : "corrupt") + ": shape " +
                shape_str(h.shape) + " of " + std::string(dtype_name(h.dtype)) + " needs " +
                std::to_string(nbytes) + " data bytes but the file holds " + std::to_string(have));

  // 64-byte aligned like Storage::allocate, so kernels see the same
  // alignment whether a tensor was loaded or made.
  const std::size_t alloc = (static_cast<std::size_t>(nbytes) + 63) / 64 * 64 + 64;
  std::shared_ptr<void> buffer(std::aligned_alloc(64, alloc), std::free);
  if (!buffer) throw Error(where + ": cannot allocate " + std::to_string(nbytes) + " bytes");
  auto* bytes = static_cast<unsigned char*>(buffer.get());
  in.read(reinterpret_cast<char*>(bytes), static_cast<std::streamsize>(nbytes));
  if (!in && nbytes > 0) throw Error(where + ": read failed (" + errno_text() + ")");
  if (h.swap_bytes) byteswap_all(bytes, static_cast<std::size_t>(count), isz);
  if (h.dtype == DType::boolean) {
    // numpy writes 0/1, but any other byte would be an invalid C++ bool.
    for (std::uint64_t i = 0; i < count; ++i) bytes[i] = bytes[i] != 0;
  }

  // Fortran order: the same shape with reversed (column-major) strides.
  Shape strides(h.shape.size());
  std::int64_t step = 1;
  for (std::size_t j = 0; j < h.shape.size(); ++j) {
    const std::size_t i = h.fortran ? j : h.shape.size() - 1 - j;
    strides[i] = step;
    step *= std::max<std::int64_t>(h.shape[i], 1);
  }
  void* data = buffer.get();
  auto storage =
      Storage::wrap(data, static_cast<std::size_t>(nbytes), Device::cpu(), std::move(buffer));
  return Tensor::from_storage(std::move(storage), h.shape, strides, 0, h.dtype);
}

std::string npy_bytes(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).contiguous();
  switch (host.dtype()) {
    case DType::f32:
      return npy_bytes_as<float>(host);
    case DType::f64:
      return npy_bytes_as<double>(host);
    case DType::boolean:
      return npy_bytes_as<bool>(host);
    case DType::i32:
      return npy_bytes_as<std::int32_t>(host);
    case DType::i64:
      return npy_bytes_as<std::int64_t>(host);
    case DType::f16: {
      // xnpy knows no half type: the same bits as uint16, then the header's
      // descr '<u2' becomes '<f2' (same length, so the padding still holds).
      std::vector<std::size_t> shape(host.shape().begin(), host.shape().end());
      xt::xarray<std::uint16_t> dense =
          xt::adapt(static_cast<const std::uint16_t*>(host.data_ptr()),
                    static_cast<std::size_t>(host.numel()), xt::no_ownership(), shape);
      std::string out = xt::dump_npy(dense);
      const std::size_t at = out.find("'<u2'");
      if (at == std::string::npos) throw Error("npy: unexpected float16 header from xtensor");
      out[at + 2] = 'f';
      return out;
    }
    default:  // bf16: written as float32 (NumPy has no bfloat16)
      return npy_bytes_as<float>(host.to(DType::f32));
  }
}

DType npy_dtype(DType dt) { return dt == DType::bf16 ? DType::f32 : dt; }

}  // namespace strata::cli
