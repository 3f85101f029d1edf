// The CLI's .npy reader and writer (app/npy_io.cpp): values, layouts without
// copies, header variants xnpy gets wrong, error messages, all-or-nothing
// writes. Files are written byte by byte here, independently of the code
// under test.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli/temp_dir.hpp"
#include "npy_io.hpp"
#include "output_files.hpp"

namespace fs = std::filesystem;
using strata::DType;
using strata::Shape;
using strata::Tensor;

namespace {

using strata::cli::test::TempDir;

// A .npy file: magic, version, little-endian header length, the dict padded
// with spaces and ended by '\n' so the data starts at a multiple of 64.
std::string make_npy(const std::string& dict, const std::string& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::size_t n = header.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((n >> 16) & 0xff);
    out += static_cast<char>((n >> 24) & 0xff);
  }
  return out + header + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::string& path) {
  try {
    strata::cli::load_npy(path, "--q");
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("npy: C-order float64 loads with row-major strides and exact values", "[cli][npy]") {
  TempDir dir;
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i) - 3.25;
  write(dir.file("a.npy"),
        make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }", raw(v)));
  const Tensor t = strata::cli::load_npy(dir.file("a.npy"), "--q");
  CHECK(t.dtype() == DType::f64);
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.strides() == Shape{12, 4, 1});
  CHECK(t.to_vector<double>() == v);
}

TEST_CASE("npy: Fortran order becomes a column-major view of the loaded buffer", "[cli][npy]") {
  TempDir dir;
  // Element [i][j][k] of a 2x3x4 Fortran array sits at i + 2 j + 6 k.
  std::vector<float> colmajor(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) colmajor[i + 2 * j + 6 * k] = 100.f * i + 10.f * j + k + 0.5f;
  write(dir.file("f.npy"),
        make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", raw(colmajor)));
  const Tensor t = strata::cli::load_npy(dir.file("f.npy"), "--k");
  CHECK(t.dtype() == DType::f32);
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.strides() == Shape{1, 2, 6});
  CHECK_FALSE(t.is_contiguous());
  // Borrowed, not copied: the storage wraps the loaded buffer at offset 0.
  CHECK_FALSE(t.storage()->owns_memory());
  CHECK(t.data_ptr() == t.storage()->data());
  CHECK(t.storage()->nbytes() == 24 * sizeof(float));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        INFO("element " << i << "," << j << "," << k);
        CHECK(t.item({i, j, k}) == 100.0 * i + 10.0 * j + k + 0.5);
      }
}

TEST_CASE("npy: bool masks, big-endian data, version 2 and long headers", "[cli][npy]") {
  TempDir dir;
  SECTION("bool, with a non-0/1 byte read as true") {
    const std::string bytes("\x01\x00\x00\x07\x01\x00", 6);
    write(dir.file("b.npy"),
          make_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", bytes));
    const Tensor t = strata::cli::load_npy(dir.file("b.npy"), "--mask");
    CHECK(t.dtype() == DType::boolean);
    CHECK(t.to_vector<double>() == std::vector<double>{1, 0, 0, 1, 1, 0});
  }
  SECTION("big-endian float32 is byte-swapped") {
    const float x = 1.75f, y = -2.5f;
    std::string bytes = raw(std::vector<float>{x, y});
    std::reverse(bytes.begin(), bytes.begin() + 4);
    std::reverse(bytes.begin() + 4, bytes.end());
    write(dir.file("be.npy"),
          make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", bytes));
    CHECK(strata::cli::load_npy(dir.file("be.npy"), "--q").to_vector<double>() ==
          std::vector<double>{1.75, -2.5});
  }
  SECTION("version 2.0 header, keys in any order") {
    write(dir.file("v2.npy"), make_npy("{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}",
                                       raw(std::vector<double>{1, 2, 3}), 2));
    CHECK(strata::cli::load_npy(dir.file("v2.npy"), "--q").to_vector<double>() ==
          std::vector<double>{1, 2, 3});
  }
  SECTION("a version 1.0 header longer than 127 bytes (xnpy misreads its length)") {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 2), }";
    dict += std::string(150, ' ');
    write(dir.file("long.npy"), make_npy(dict, raw(std::vector<float>{4, 5})));
    CHECK(slurp(dir.file("long.npy")).size() > 128 + 8);
    const Tensor t = strata::cli::load_npy(dir.file("long.npy"), "--q");
    CHECK(t.shape() == Shape{1, 1, 1, 1, 2});
    CHECK(t.to_vector<double>() == std::vector<double>{4, 5});
  }
  SECTION("token ids (int32, int64, big-endian too) and float16") {
    write(dir.file("i8.npy"),
          make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }",
                   raw(std::vector<std::int64_t>{1, -2, 300000000000})));
    const Tensor a = strata::cli::load_npy(dir.file("i8.npy"), "--tokens");
    CHECK(a.dtype() == DType::i64);
    CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 300000000000});
    std::string be = raw(std::vector<std::int32_t>{7, 65536});
    for (std::size_t i = 0; i < be.size(); i += 4) std::reverse(be.begin() + i, be.begin() + i + 4);
    write(dir.file("i4.npy"),
          make_npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be));
    const Tensor b = strata::cli::load_npy(dir.file("i4.npy"), "--tokens");
    CHECK(b.dtype() == DType::i32);
    CHECK(b.to_vector<std::int32_t>() == std::vector<std::int32_t>{7, 65536});
    // 1.0, -2.5 and 65504 (the largest float16) as IEEE half bit patterns.
    write(dir.file("f2.npy"), make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
                                       raw(std::vector<std::uint16_t>{0x3c00, 0xc100, 0x7bff})));
    const Tensor h = strata::cli::load_npy(dir.file("f2.npy"), "--q");
    CHECK(h.dtype() == DType::f16);
    CHECK(h.to_vector<double>() == std::vector<double>{1.0, -2.5, 65504.0});
    // float16 is written as float16 ('<f2'), with the same bits.
    write(dir.file("w2.npy"), strata::cli::npy_bytes(h));
    CHECK(slurp(dir.file("w2.npy")).find("'descr': '<f2'") != std::string::npos);
    const Tensor h2 = strata::cli::load_npy(dir.file("w2.npy"), "--out");
    CHECK(h2.dtype() == DType::f16);
    CHECK(h2.to_vector<double>() == h.to_vector<double>());
    // ids round trip through the writer.
    write(dir.file("w8.npy"), strata::cli::npy_bytes(a));
    CHECK(strata::cli::load_npy(dir.file("w8.npy"), "--out").to_vector<std::int64_t>() ==
          a.to_vector<std::int64_t>());
  }
  SECTION("empty and zero-dimensional arrays") {
    write(dir.file("e.npy"),
          make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0, 3), }", ""));
    CHECK(strata::cli::load_npy(dir.file("e.npy"), "--k").shape() == Shape{2, 0, 3});
    write(dir.file("s.npy"), make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                                      raw(std::vector<double>{7})));
    const Tensor s = strata::cli::load_npy(dir.file("s.npy"), "--k");
    CHECK(s.dim() == 0);
    CHECK(s.to_vector<double>() == std::vector<double>{7});
  }
}

TEST_CASE("npy: malformed files give one message naming the option and file", "[cli][npy]") {
  TempDir dir;
  const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string six = raw(std::vector<float>{1, 2, 3, 4, 5, 6});
  struct Bad {
    const char* name;
    std::string bytes;
    const char* expect;
  };
  const std::vector<Bad> cases = {
      {"magic", "PK\x03\x04 not numpy", "not a .npy file"},
      {"short", std::string("\x93NUMPY\x01", 7), "not a .npy file"},
      {"truncated_data", make_npy(f4, six.substr(0, 20)), "truncated"},
      {"extra_data", make_npy(f4, six + "xx"), "corrupt"},
      {"header_len", make_npy(f4, six).substr(0, 40), "truncated .npy header"},
      {"version",
       [&] {
         std::string s = make_npy(f4, six);
         s[6] = 9;
         return s;
       }(),
       "unsupported .npy format version 9"},
      {"uint16", make_npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", "xxxx"),
       "dtype '<u2' is not supported"},
      {"complex", make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "xxxxxxxx"),
       "dtype '<c8' is not supported"},
      // Found by fuzzing: no data, but the strides span 2962930340770696296 x 6666.
      {"empty_huge_span",
       make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2962930340770696296, "
                "6666), }",
                ""),
       "is too large"},
      {"object",
       make_npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "xxxxxxxxxxxxxxxx"),
       "dtype '|O' (Python objects) is not supported"},
      {"structured",
       make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                raw(std::vector<float>{1})),
       "structured dtypes"},
      {"fortran_value",
       make_npy("{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,), }",
                raw(std::vector<float>{1})),
       "fortran_order must be True or False"},
      {"negative_dim", make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""),
       "non-negative integers"},
      {"missing_key", make_npy("{'descr': '<f4', 'shape': (1,), }", raw(std::vector<float>{1})),
       "needs the keys"},
      {"nine_dims",
       make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                raw(std::vector<float>{1})),
       "at most 8"},
  };
  for (const Bad& b : cases) {
    INFO("case " << b.name);
    const std::string path = dir.file(std::string(b.name) + ".npy");
    write(path, b.bytes);
    const std::string msg = error_of(path);
    CAPTURE(msg);
    CHECK(msg.rfind("--q '" + path + "'", 0) == 0);
    CHECK(msg.find(b.expect) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  }
  const std::string missing = error_of(dir.file("nope.npy"));
  CHECK(missing.find("cannot open") != std::string::npos);
  CHECK(error_of(dir.path.string()).find("not a regular file") != std::string::npos);
}

TEST_CASE("npy: writing a strided view stores its logical values in C order", "[cli][npy]") {
  TempDir dir;
  // A transposed, sliced view: xt::dump_npy of such a view would write the raw buffer.
  const Tensor base = Tensor::arange(60, DType::f64).reshape({5, 12});
  const Tensor view = base.transpose(0, 1).slice(0, 1, 12, 3);  // [4, 5], strides [3, 12]
  REQUIRE_FALSE(view.is_contiguous());
  write(dir.file("w.npy"), strata::cli::npy_bytes(view));
  const Tensor back = strata::cli::load_npy(dir.file("w.npy"), "--out");
  CHECK(back.shape() == view.shape());
  CHECK(back.is_contiguous());
  CHECK(back.to_vector<double>() == view.to_vector<double>());
  // And the header is the plain C-order one NumPy expects.
  const std::string bytes = slurp(dir.file("w.npy"));
  CHECK(bytes.find("'fortran_order': False") != std::string::npos);
  CHECK(bytes.find("'descr': '<f8'") != std::string::npos);

  const Tensor f = Tensor::arange(6, DType::f32).reshape({2, 3});
  write(dir.file("f.npy"), strata::cli::npy_bytes(f));
  CHECK(strata::cli::load_npy(dir.file("f.npy"), "--out").dtype() == DType::f32);
}

TEST_CASE("npy: writes are all or nothing", "[cli][npy]") {
  TempDir dir;
  const std::string out = dir.file("out.npy");
  write(out, "precious");
  const std::string missing_dir = dir.file("no/such/dir/lse.npy");
  using strata::cli::NamedPath;
  CHECK_THROWS_AS(
      strata::cli::write_outputs({{{out, "--out"}, "new"}, {{missing_dir, "--lse"}, "x"}}),
      strata::Error);
  CHECK(slurp(out) == "precious");
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK(entry.path().filename().string().rfind(".strata-tmp", 0) != 0);

  strata::cli::write_outputs({{{out, "--out"}, "new"}, {{dir.file("lse.npy"), "--lse"}, "lse"}});
  CHECK(slurp(out) == "new");
  CHECK(slurp(dir.file("lse.npy")) == "lse");
  CHECK_THROWS_AS(strata::cli::check_outputs({{missing_dir, "--lse"}}, {}), strata::Error);
  CHECK_THROWS_AS(strata::cli::check_outputs({{dir.path.string(), "--out"}}, {}), strata::Error);
  CHECK_NOTHROW(strata::cli::check_outputs({{out, "--out"}}, {}));
}
