// .npy reading and writing (strata/npy.hpp). The format: the magic
// "\x93NUMPY", a version byte pair, a little-endian header length (2 bytes in
// version 1.0, 4 in 2.0 and 3.0), a Python dict literal giving descr,
// fortran_order and shape, padded so the data starts at a multiple of 64,
// then the elements.
#include "strata/npy.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

#include "strata/detail/file_io.hpp"

namespace strata {
namespace {

// Not xtensor's xnpy (checked on 0.24.3): its reader must be told the
// element type up front, misses a truncated data section, misreads a
// version-1.0 header of 128 bytes or more (its length goes through a signed
// char) and rejects keys in an order other than pprint's; its writer writes
// an adaptor's raw buffer whatever its strides. The header is a tiny Python
// dict, so it is parsed and written here, and the data is read straight into
// the tensor's storage.

static_assert(std::endian::native == std::endian::little,
              "the .npy writer and the byte-order handling assume a little-endian host");

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

constexpr const char* kReadable = "float32, float64, float16, int32, int64 and bool";

void parse_descr(const std::string& descr, Header& h, const DictParser& p,
                 const std::string& where) {
  if (descr.size() < 2) p.bad("bad descr '" + descr + "'");
  const char order = descr[0];
  const std::string kind = descr.substr(1);
  if (order != '<' && order != '>' && order != '=' && order != '|') p.bad("bad byte order");
  const std::pair<const char*, DType> kinds[] = {{"f4", DType::f32}, {"f8", DType::f64},
                                                 {"f2", DType::f16}, {"i4", DType::i32},
                                                 {"i8", DType::i64}, {"b1", DType::boolean}};
  const auto* k = std::find_if(std::begin(kinds), std::end(kinds),
                               [&](const auto& e) { return kind == e.first; });
  if (k == std::end(kinds))
    throw Error(where + ": dtype '" + descr + "'" + (kind == "O" ? " (Python objects)" : "") +
                " is not supported (strata reads " + kReadable + " arrays)");
  h.dtype = k->second;
  // '=' is native (little-endian here) and '|' means one byte.
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
        throw Error(where + ": structured dtypes are not supported (need " + kReadable + ")");
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

std::string errno_text() { return std::strerror(errno); }

// Header and contiguous host data of a tensor to write.
struct Encoded {
  std::string header;
  Tensor host;
};

DType written_dtype(DType dt, const NpyWriteOptions& opt, const char* op) {
  if (dt != DType::bf16) return dt;
  STRATA_CHECK(opt.bf16_as_f32, op,
               "dtype bf16 has no NumPy equivalent; NpyWriteOptions::bf16_as_f32 writes it as "
               "float32 (exact), or convert the tensor first");
  return DType::f32;
}

Encoded encode(const Tensor& t, const NpyWriteOptions& opt, const std::string& where) {
  STRATA_CHECK(t.defined(), where.c_str(), "tensor is undefined");
  const DType dt = written_dtype(t.dtype(), opt, where.c_str());
  Tensor host = t.to(Device::cpu()).contiguous();
  if (host.dtype() != dt) host = host.to(dt);
  const char* descr = dt == DType::f32       ? "<f4"
                      : dt == DType::f64     ? "<f8"
                      : dt == DType::f16     ? "<f2"
                      : dt == DType::i32     ? "<i4"
                      : dt == DType::i64     ? "<i8"
                      : dt == DType::boolean ? "|b1"
                                             : nullptr;
  STRATA_CHECK(descr != nullptr, where.c_str(), "dtype ", dtype_name(dt), " has no .npy form");
  // NumPy's own layout: "(n,)" for one dim, "(a, b)" for more, "()" for 0-d.
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < host.shape().size(); ++i)
    dict += (i ? ", " : "") + std::to_string(host.shape()[i]);
  dict += host.dim() == 1 ? ",), }" : "), }";
  // Version 1.0 (a 2-byte length) always suffices: at most kMaxDims dims.
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>((dict.size() >> 8) & 0xff);
  return {header + dict, host};
}

std::size_t data_bytes(const Tensor& host) {
  return static_cast<std::size_t>(host.numel()) * itemsize(host.dtype());
}

}  // namespace

DType npy_dtype(DType dt, const NpyWriteOptions& opt) {
  return written_dtype(dt, opt, "npy_dtype");
}

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

  // Read straight into the tensor's storage: no copy afterwards.
  std::shared_ptr<Storage> storage;
  try {
    storage = Storage::allocate(static_cast<std::size_t>(nbytes), Device::cpu());
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  auto* bytes = static_cast<unsigned char*>(storage->data());
  in.read(reinterpret_cast<char*>(bytes), static_cast<std::streamsize>(nbytes));
  if (!in && nbytes > 0) throw Error(where + ": read failed (" + errno_text() + ")");
  if (h.swap_bytes)
    for (std::uint64_t e = 0; e < count; ++e) std::reverse(bytes + e * isz, bytes + (e + 1) * isz);
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
  return Tensor::from_storage(std::move(storage), h.shape, strides, 0, h.dtype);
}

std::string npy_bytes(const Tensor& t, const NpyWriteOptions& opt) {
  const Encoded e = encode(t, opt, "npy_bytes");
  std::string out = e.header;
  const std::size_t n = data_bytes(e.host);
  if (n > 0) out.append(static_cast<const char*>(e.host.data_ptr()), n);
  return out;
}

void save_npy(const std::string& path, const Tensor& t, const NpyWriteOptions& opt) {
  // Any refusal comes before the file is touched.
  const Encoded e = encode(t, opt, "save_npy '" + path + "'");
  detail::ReplacingFile file(path, "save_npy");
  file.write(e.header.data(), e.header.size());
  const std::size_t n = data_bytes(e.host);
  if (n > 0) file.write(e.host.data_ptr(), n);
  file.commit();
}

}  // namespace strata
