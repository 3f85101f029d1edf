// The library's .npy reader and writer (strata/npy.hpp, core/src/npy.cpp):
// values, layouts without copies, header variants xnpy gets wrong, error
// messages, every dtype and view on save, bf16's refusal, atomic saves.
// Files are written byte by byte here, independently of the code under test.
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cli/temp_dir.hpp"
#include "strata/npy.hpp"

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

// Writes make_npy(dict, data, major) to dir/name and loads it.
Tensor load_made(const TempDir& dir, const std::string& name, const std::string& dict,
                 const std::string& data, int major = 1) {
  write(dir.file(name), make_npy(dict, data, major));
  return strata::load_npy(dir.file(name));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::string& path) {
  try {
    strata::load_npy(path, "--q");
  } catch (const strata::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("npy: C-order float64 loads with row-major strides and exact values", "[core][npy]") {
  TempDir dir;
  std::vector<double> v(24);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5 * static_cast<double>(i) - 3.25;
  const Tensor t = load_made(
      dir, "a.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }", raw(v));
  CHECK(t.dtype() == DType::f64);
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.strides() == Shape{12, 4, 1});
  CHECK(t.to_vector<double>() == v);
}

TEST_CASE("npy: Fortran order becomes a column-major view of the loaded buffer", "[core][npy]") {
  TempDir dir;
  // Element [i][j][k] of a 2x3x4 Fortran array sits at i + 2 j + 6 k.
  std::vector<float> colmajor(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) colmajor[i + 2 * j + 6 * k] = 100.f * i + 10.f * j + k + 0.5f;
  const Tensor t = load_made(
      dir, "f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", raw(colmajor));
  CHECK(t.dtype() == DType::f32);
  CHECK(t.shape() == Shape{2, 3, 4});
  CHECK(t.strides() == Shape{1, 2, 6});
  CHECK_FALSE(t.is_contiguous());
  // Not copied: the view starts at its storage, which holds just the data.
  CHECK(t.data_ptr() == t.storage()->data());
  CHECK(t.storage()->nbytes() == 24 * sizeof(float));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        INFO("element " << i << "," << j << "," << k);
        CHECK(t.item({i, j, k}) == 100.0 * i + 10.0 * j + k + 0.5);
      }
}

TEST_CASE("npy: bool masks, big-endian data, version 2 and long headers", "[core][npy]") {
  TempDir dir;
  SECTION("bool, with a non-0/1 byte read as true") {
    const std::string bytes("\x01\x00\x00\x07\x01\x00", 6);
    const Tensor t = load_made(
        dir, "b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", bytes);
    CHECK(t.dtype() == DType::boolean);
    CHECK(t.to_vector<double>() == std::vector<double>{1, 0, 0, 1, 1, 0});
  }
  SECTION("big-endian float32 is byte-swapped") {
    const float x = 1.75f, y = -2.5f;
    std::string bytes = raw(std::vector<float>{x, y});
    std::reverse(bytes.begin(), bytes.begin() + 4);
    std::reverse(bytes.begin() + 4, bytes.end());
    const Tensor t = load_made(dir, "be.npy",
                               "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", bytes);
    CHECK(t.to_vector<double>() == std::vector<double>{1.75, -2.5});
  }
  SECTION("version 2.0 header, keys in any order") {
    const Tensor t =
        load_made(dir, "v2.npy", "{'shape': (3,), 'fortran_order': False, 'descr': '<f8'}",
                  raw(std::vector<double>{1, 2, 3}), 2);
    CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3});
  }
  SECTION("a version 1.0 header longer than 127 bytes (xnpy misreads its length)") {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 2), }";
    dict += std::string(150, ' ');
    write(dir.file("long.npy"), make_npy(dict, raw(std::vector<float>{4, 5})));
    CHECK(slurp(dir.file("long.npy")).size() > 128 + 8);
    const Tensor t = strata::load_npy(dir.file("long.npy"));
    CHECK(t.shape() == Shape{1, 1, 1, 1, 2});
    CHECK(t.to_vector<double>() == std::vector<double>{4, 5});
  }
  SECTION("token ids (int32, int64, big-endian too) and float16") {
    const Tensor a =
        load_made(dir, "i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }",
                  raw(std::vector<std::int64_t>{1, -2, 300000000000}));
    CHECK(a.dtype() == DType::i64);
    CHECK(a.to_vector<std::int64_t>() == std::vector<std::int64_t>{1, -2, 300000000000});
    std::string be = raw(std::vector<std::int32_t>{7, 65536});
    for (std::size_t i = 0; i < be.size(); i += 4) std::reverse(be.begin() + i, be.begin() + i + 4);
    const Tensor b =
        load_made(dir, "i4.npy", "{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be);
    CHECK(b.dtype() == DType::i32);
    CHECK(b.to_vector<std::int32_t>() == std::vector<std::int32_t>{7, 65536});
    // 1.0, -2.5 and 65504 (the largest float16) as IEEE half bit patterns.
    const Tensor h =
        load_made(dir, "f2.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
                  raw(std::vector<std::uint16_t>{0x3c00, 0xc100, 0x7bff}));
    CHECK(h.dtype() == DType::f16);
    CHECK(h.to_vector<double>() == std::vector<double>{1.0, -2.5, 65504.0});
    // float16 is written as float16 ('<f2'), with the same bits.
    write(dir.file("w2.npy"), strata::npy_bytes(h));
    CHECK(slurp(dir.file("w2.npy")).find("'descr': '<f2'") != std::string::npos);
    const Tensor h2 = strata::load_npy(dir.file("w2.npy"));
    CHECK(h2.dtype() == DType::f16);
    CHECK(h2.to_vector<double>() == h.to_vector<double>());
    // ids round trip through the writer.
    write(dir.file("w8.npy"), strata::npy_bytes(a));
    CHECK(strata::load_npy(dir.file("w8.npy")).to_vector<std::int64_t>() ==
          a.to_vector<std::int64_t>());
  }
  SECTION("empty and zero-dimensional arrays") {
    const Tensor t = load_made(
        dir, "e.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 0, 3), }", "");
    CHECK(t.shape() == Shape{2, 0, 3});
    const Tensor s =
        load_made(dir, "s.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                  raw(std::vector<double>{7}));
    CHECK(s.dim() == 0);
    CHECK(s.to_vector<double>() == std::vector<double>{7});
  }
}

TEST_CASE("npy: malformed files give one message naming the option and file", "[core][npy]") {
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
  // Without an argument name the messages start with the function's.
  try {
    strata::load_npy(dir.file("magic.npy"));
    FAIL("no error");
  } catch (const strata::Error& e) {
    CHECK(std::string(e.what()).rfind("load_npy '" + dir.file("magic.npy") + "': not a .npy", 0) ==
          0);
  }
  CHECK(error_of(dir.path.string()).find("not a regular file") != std::string::npos);
}

TEST_CASE("npy: writing a strided view stores its logical values in C order", "[core][npy]") {
  TempDir dir;
  // A transposed, sliced view: xt::dump_npy of such a view would write the raw buffer.
  const Tensor base = Tensor::arange(60, DType::f64).reshape({5, 12});
  const Tensor view = base.transpose(0, 1).slice(0, 1, 12, 3);  // [4, 5], strides [3, 12]
  REQUIRE_FALSE(view.is_contiguous());
  write(dir.file("w.npy"), strata::npy_bytes(view));
  const Tensor back = strata::load_npy(dir.file("w.npy"));
  CHECK(back.shape() == view.shape());
  CHECK(back.is_contiguous());
  CHECK(back.to_vector<double>() == view.to_vector<double>());
  // And the header is the plain C-order one NumPy expects.
  const std::string bytes = slurp(dir.file("w.npy"));
  CHECK(bytes.find("'fortran_order': False") != std::string::npos);
  CHECK(bytes.find("'descr': '<f8'") != std::string::npos);

  const Tensor f = Tensor::arange(6, DType::f32).reshape({2, 3});
  write(dir.file("f.npy"), strata::npy_bytes(f));
  CHECK(strata::load_npy(dir.file("f.npy")).dtype() == DType::f32);
}

TEST_CASE("npy: save_npy writes every dtype from any view, in NumPy's own header layout",
          "[core][npy]") {
  TempDir dir;
  // NumPy's np.save header for a (2, 3) float32 array, byte for byte (NumPy
  // 1.24 writes these 152 bytes): the dict padded with spaces to 117 bytes
  // and a newline, so that the data starts at 128.
  const std::string want_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  strata::save_npy(dir.file("h.npy"), Tensor::arange(6).reshape({2, 3}));
  const std::string h = slurp(dir.file("h.npy"));
  REQUIRE(h.size() == 128 + 24);
  CHECK(h.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));  // length 118
  CHECK(h.substr(10, 118) == want_dict + std::string(117 - want_dict.size(), ' ') + "\n");
  CHECK(h.substr(128) == raw(std::vector<float>{0, 1, 2, 3, 4, 5}));
  // One dim is "(n,)", none "()".
  strata::save_npy(dir.file("one.npy"), Tensor::zeros({7}));
  CHECK(slurp(dir.file("one.npy")).find("'shape': (7,), }") != std::string::npos);
  strata::save_npy(dir.file("zero.npy"), Tensor::zeros({}));
  CHECK(slurp(dir.file("zero.npy")).find("'shape': (), }") != std::string::npos);

  const struct {
    DType dt;
    const char* descr;
  } dtypes[] = {{DType::f32, "'<f4'"}, {DType::f64, "'<f8'"}, {DType::f16, "'<f2'"},
                {DType::i32, "'<i4'"}, {DType::i64, "'<i8'"}, {DType::boolean, "'|b1'"}};
  for (const auto& d : dtypes) {
    // Values every dtype holds exactly; bool alternates.
    std::vector<double> v(60);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = d.dt == DType::boolean ? static_cast<double>(i % 3 == 0)
                                    : static_cast<double>((i * 37) % 61) - 30;
    const Tensor base = Tensor::from_vector(v, {3, 4, 5}).to(d.dt);
    const struct {
      const char* name;
      Tensor view;
    } views[] = {
        {"contiguous", base},
        {"transposed", base.transpose(0, 2)},
        {"narrowed", base.narrow(1, 1, 2).narrow(2, 2, 3)},
        {"broadcast", base.narrow(0, 1, 1).expand({4, 4, 5})},
        {"negative strides", base.flip(0).slice(2, strata::Slice{{}, {}, -2})},
    };
    for (const auto& vw : views) {
      INFO(strata::dtype_name(d.dt) << ", " << vw.name);
      const std::string path = dir.file("v.npy");
      strata::save_npy(path, vw.view);
      const std::string bytes = slurp(path);
      CHECK(bytes.find(std::string("'descr': ") + d.descr) != std::string::npos);
      CHECK(bytes.find("'fortran_order': False") != std::string::npos);
      const Tensor back = strata::load_npy(path);
      CHECK(back.dtype() == d.dt);
      CHECK(back.shape() == vw.view.shape());
      CHECK(back.is_contiguous());
      CHECK(back.to_vector<double>() == vw.view.to_vector<double>());
      CHECK(strata::npy_bytes(vw.view) == bytes);  // the same bytes in memory
    }
  }
}

TEST_CASE("npy: bf16 is refused unless asked for as float32", "[core][npy]") {
  TempDir dir;
  const std::string path = dir.file("b.npy");
  write(path, "precious");
  const Tensor b = Tensor::from_vector(std::vector<float>{1.5f, -0.1f, 3e38f}, {3}).to(DType::bf16);
  std::string msg;
  try {
    strata::save_npy(path, b);
  } catch (const strata::Error& e) {
    msg = e.what();
  }
  CAPTURE(msg);
  CHECK(msg.rfind("save_npy '" + path + "': dtype bf16 has no NumPy equivalent", 0) == 0);
  CHECK(msg.find("bf16_as_f32") != std::string::npos);
  CHECK(slurp(path) == "precious");  // refused before the file was touched
  CHECK_THROWS_AS(strata::npy_bytes(b), strata::Error);
  CHECK_THROWS_AS(strata::npy_dtype(DType::bf16), strata::Error);

  strata::NpyWriteOptions as_f32;
  as_f32.bf16_as_f32 = true;
  CHECK(strata::npy_dtype(DType::bf16, as_f32) == DType::f32);
  CHECK(strata::npy_dtype(DType::f16, as_f32) == DType::f16);
  strata::save_npy(path, b.flip(0), as_f32);
  const Tensor back = strata::load_npy(path);
  CHECK(back.dtype() == DType::f32);
  // Every bf16 value is a float32: exact, the flip's order kept.
  const std::vector<float> bf = b.to_vector<float>();
  CHECK(back.to_vector<float>() == std::vector<float>{bf[2], bf[1], bf[0]});
}

TEST_CASE("npy: save_npy replaces a file whole or not at all", "[core][npy]") {
  TempDir dir;
  const std::string path = dir.file("out.npy");
  write(path, "precious");
  ::chmod(path.c_str(), 0640);
  const auto no_temporaries = [&] {
    for (const auto& entry : fs::directory_iterator(dir.path))
      if (entry.path().filename().string().rfind(".strata-tmp", 0) == 0) return false;
    return true;
  };

  SECTION("a write that fails part way leaves the old file") {
    // A file size limit makes write() fail with EFBIG after 4096 bytes.
    struct rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string msg;
    try {
      strata::save_npy(path, Tensor::zeros({100000}));
    } catch (const strata::Error& e) {
      msg = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CAPTURE(msg);
    CHECK(msg.rfind("save_npy: cannot write '" + path + "'", 0) == 0);
    CHECK(slurp(path) == "precious");
    CHECK(no_temporaries());
  }
  SECTION("a complete write replaces it, keeping its mode") {
    strata::save_npy(path, Tensor::arange(5, DType::i64));
    CHECK(strata::load_npy(path).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{0, 1, 2, 3, 4});
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0640);
    CHECK(no_temporaries());
  }
  SECTION("through a symlink, into a missing directory, onto a directory") {
    fs::create_symlink("out.npy", dir.file("link.npy"));
    strata::save_npy(dir.file("link.npy"), Tensor::ones({2}));
    CHECK(fs::is_symlink(dir.file("link.npy")));
    CHECK(strata::load_npy(path).to_vector<float>() == std::vector<float>{1, 1});
    const std::string nowhere = dir.file("no/such/dir/x.npy");
    CHECK_THROWS_WITH(strata::save_npy(nowhere, Tensor::ones({2})),
                      ContainsText("save_npy") && ContainsText(nowhere));
    CHECK_FALSE(fs::exists(nowhere));
    CHECK_THROWS_WITH(strata::save_npy(dir.path.string(), Tensor::ones({2})),
                      ContainsText("is a directory"));
    CHECK_THROWS_WITH(strata::save_npy(dir.file("u.npy"), Tensor()),
                      ContainsText("save_npy") && ContainsText("undefined"));
    CHECK_FALSE(fs::exists(dir.file("u.npy")));
    CHECK(no_temporaries());
  }
}
