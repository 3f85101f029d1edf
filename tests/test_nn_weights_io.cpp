// safetensors files and config.json: round trips of every dtype and layout,
// a file built byte by byte from the format's description (docs/guide/models.md),
// every malformed header the reader refuses, and both config styles.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "catch.hpp"
#include "strata/nn/config.hpp"
#include "strata/nn/safetensors.hpp"
#include "strata/tensor.hpp"
#include "test_core_util.hpp"

namespace {

using strata::DType;
using strata::Shape;
using strata::Tensor;
using strata::nn::Arch;
using strata::nn::ModelConfig;
using strata::nn::SafetensorsFile;
using strata::nn::TensorDict;

// A fresh directory for one test case, removed (with its files) at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = "/tmp/strata-nn-io-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    for (const std::string& f : files()) ::unlink((path_ + "/" + f).c_str());
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Names in the directory (temporaries left behind would show up here).
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
          out.emplace_back(e->d_name);
      ::closedir(d);
    }
    return out;
  }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

// A file: the 8-byte length of `header` (or `length` when given), the
// header, then `data`.
std::string file_of(const std::string& header, const std::string& data,
                    std::uint64_t length = UINT64_MAX) {
  return le64(length == UINT64_MAX ? header.size() : length) + header + data;
}

SafetensorsFile parse(const std::string& bytes) {
  return strata::nn::parse_safetensors(bytes.data(), bytes.size(), "mem.safetensors");
}

// Same shape, dtype and values (compared as doubles; every dtype here
// converts exactly).
void require_same(const Tensor& got, const Tensor& want) {
  REQUIRE(got.defined());
  CHECK(got.dtype() == want.dtype());
  REQUIRE(got.shape() == want.shape());
  CHECK(got.device() == strata::Device::cpu());
  CHECK(got.is_contiguous());
  CHECK(got.to_vector<double>() == want.to_vector<double>());
}

// Values of each dtype, including ones that need every bit (negative,
// fractional, large, subnormal for f16).
Tensor sample(DType dt, const Shape& shape, std::uint64_t seed) {
  if (strata::is_floating(dt)) return Tensor::randn(shape, seed, DType::f64).to(dt);
  const std::int64_t n = strata::shape_numel(shape);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (dt == DType::boolean)
      v[k] = static_cast<double>((i * 7 + static_cast<std::int64_t>(seed)) % 3 == 0);
    if (dt == DType::i32)
      v[k] = static_cast<double>((i - 3) * 1000003 - static_cast<std::int64_t>(seed));
    if (dt == DType::i64) v[k] = static_cast<double>((i - 5) * (std::int64_t{1} << 40) + 12345);
  }
  return Tensor::from_vector(v, shape).to(dt);
}

constexpr DType kAll[] = {DType::f32, DType::f64,     DType::f16, DType::bf16,
                          DType::i32, DType::boolean, DType::i64};

}  // namespace

TEST_CASE("safetensors: every dtype and shape round trips", "[nn_io][safetensors]") {
  TempDir dir;
  TensorDict tensors;
  std::uint64_t seed = 1;
  for (DType dt : kAll) {
    const std::string n(strata::dtype_name(dt));
    tensors[n + ".matrix"] = sample(dt, {3, 5}, seed++);
    tensors[n + ".scalar"] = sample(dt, {}, seed++);
    tensors[n + ".empty"] = sample(dt, {2, 0, 3}, seed++);
    tensors[n + ".rank8"] = sample(dt, {1, 2, 1, 2, 1, 2, 1, 3}, seed++);
  }
  const std::string path = dir.file("all.safetensors");
  strata::nn::save_safetensors(path, tensors);
  const SafetensorsFile back = strata::nn::load_safetensors(path);
  CHECK(back.metadata.empty());
  REQUIRE(back.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    REQUIRE(back.tensors.count(name) == 1);
    require_same(back.tensors.at(name), t);
  }
  // The in-memory reader gives the same.
  const SafetensorsFile mem = parse(read_all(path));
  for (const auto& [name, t] : tensors) require_same(mem.tensors.at(name), t);
  CHECK(dir.files() == std::vector<std::string>{"all.safetensors"});  // no temporary left
}

TEST_CASE("safetensors: views are saved as their logical values", "[nn_io][safetensors]") {
  TempDir dir;
  const Tensor base = Tensor::randn({4, 6}, 7);
  TensorDict views{
      {"transposed", base.transpose(0, 1)},
      {"strided", base.slice(1, 0, 6, 2)},
      {"flipped", base.flip(0)},
      {"broadcast", base.select(0, 1).unsqueeze(0).expand({3, 6})},
      {"offset", base.narrow(0, 2, 2).narrow(1, 1, 3)},
  };
  for (const auto& [name, t] : views) REQUIRE_FALSE(t.is_contiguous());
  const std::string path = dir.file("views.safetensors");
  strata::nn::save_safetensors(path, views);
  const SafetensorsFile back = strata::nn::load_safetensors(path);
  for (const auto& [name, t] : views) {
    INFO(name);
    require_same(back.tensors.at(name), t.contiguous());
  }
  // The file holds exactly the logical elements: 8-byte length, header, data.
  std::int64_t elements = 0;
  for (const auto& [name, t] : views) elements += t.numel();
  const std::string bytes = read_all(path);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(bytes.size() == 8 + n + static_cast<std::uint64_t>(elements) * 4);
}

TEST_CASE("safetensors: metadata round trips", "[nn_io][safetensors]") {
  TempDir dir;
  const std::map<std::string, std::string> meta{
      {"format", "pt"}, {"note", "quotes \" and \\ and\nnewline, unicode \xc3\xa9"}, {"", ""}};
  const std::string path = dir.file("meta.safetensors");
  strata::nn::save_safetensors(path, {{"w", Tensor::full({2}, 1.0)}}, meta);
  const SafetensorsFile back = strata::nn::load_safetensors(path);
  CHECK(back.metadata == meta);
}

TEST_CASE("safetensors: the file is the format's bytes exactly", "[nn_io][safetensors]") {
  TempDir dir;
  // Expected bytes from the format's description, by hand: tensors laid out
  // by descending dtype alignment then name, the header (compact JSON,
  // __metadata__ first, then the tensors in layout order) padded with spaces
  // to a multiple of 8, then little-endian data.
  std::string header = R"({"__metadata__":{"format":"pt"},)"
                       R"("a":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                       R"("d":{"dtype":"BF16","shape":[1],"data_offsets":[16,18]},)"
                       R"("e":{"dtype":"F16","shape":[2,1],"data_offsets":[18,22]},)"
                       R"("c":{"dtype":"BOOL","shape":[3],"data_offsets":[22,25]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const std::string data = std::string("\x07\0\0\0\0\0\0\0", 8)  // i64 7
                           + std::string("\0\0\x80\x3f", 4)      // f32 1.0
                           + std::string("\0\0\0\xc0", 4)        // f32 -2.0
                           + std::string("\xc0\x3f", 2)          // bf16 1.5 (0x3fc0)
                           + std::string("\0\x38", 2)            // f16 0.5 (0x3800)
                           + std::string("\0\xbc", 2)            // f16 -1 (0xbc00)
                           + std::string("\x01\0\x01", 3);       // bool
  const std::string expected = le64(header.size()) + header + data;

  TensorDict t;
  t["b"] = Tensor::from_vector(std::vector<float>{1.0f, -2.0f}, {2});
  t["a"] = Tensor::full({}, 7.0, DType::i64);
  t["d"] = Tensor::full({1}, 1.5, DType::bf16);
  t["e"] = Tensor::from_vector(std::vector<double>{0.5, -1.0}, {2, 1}).to(DType::f16);
  t["c"] = Tensor::from_vector(std::vector<bool>{true, false, true}, {3});
  const std::string path = dir.file("golden.safetensors");
  strata::nn::save_safetensors(path, t, {{"format", "pt"}});
  CHECK(read_all(path) == expected);
  CHECK(strata::nn::safetensors_bytes(t, {{"format", "pt"}}) == expected);

  // And the reader takes the hand-made bytes back to the same tensors.
  const SafetensorsFile back = parse(expected);
  for (const auto& [name, tensor] : t) require_same(back.tensors.at(name), tensor);
  CHECK(back.metadata == std::map<std::string, std::string>{{"format", "pt"}});

  // No tensors, no metadata: "{}" and six spaces.
  strata::nn::save_safetensors(path, {});
  CHECK(read_all(path) == le64(8) + "{}      ");
  CHECK(parse(le64(8) + "{}      ").tensors.empty());
}

TEST_CASE("safetensors: a BOOL byte other than 0 or 1 reads as true", "[nn_io][safetensors]") {
  const SafetensorsFile f =
      parse(file_of(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                    std::string("\x02\x00\xff", 3)));
  const Tensor& m = f.tensors.at("m");
  const auto* p = static_cast<const unsigned char*>(m.data_ptr());
  CHECK((p[0] == 1 && p[1] == 0 && p[2] == 1));
}

TEST_CASE("safetensors: a malformed file is an Error naming the file and tensor",
          "[nn_io][safetensors]") {
  const std::string f8(8, '\0');  // data for one F32 [2]
  // `entry` as the value of tensor "w", with `data` after the header.
  auto one = [](const std::string& entry) { return "{\"w\":" + entry + "}"; };
  const std::string ok = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  REQUIRE(parse(file_of(one(ok), f8)).tensors.at("w").shape() == Shape{2});
  const std::string src = "mem.safetensors";

  SECTION("header length") {
    CORE_REQUIRE_ERROR(parse(std::string("\x01\x02", 2)), src, "shorter than the 8-byte");
    CORE_REQUIRE_ERROR(parse(file_of(one(ok), f8, 100'000'001)), src, "100 MB");
    CORE_REQUIRE_ERROR(parse(file_of(one(ok), f8, UINT64_MAX - 1)), src, "100 MB");
    CORE_REQUIRE_ERROR(parse(file_of(one(ok), f8, one(ok).size() + 9)), src,
                       "runs past the end of the file");
  }
  SECTION("JSON") {
    CORE_REQUIRE_ERROR(parse(file_of("{\"w\":", f8)), src, "not valid JSON");
    CORE_REQUIRE_ERROR(parse(file_of("", "")), src, "not valid JSON");
    CORE_REQUIRE_ERROR(parse(file_of("{\"\xff\":1}", "")), src, "not valid JSON");  // not UTF-8
    CORE_REQUIRE_ERROR(parse(file_of("[1, 2]", "")), src, "array, not an object");
    CORE_REQUIRE_ERROR(parse(file_of(R"({"w":)" + ok + R"(,"w":)" + ok + "}", f8)), src,
                       "'w' twice");
    CORE_REQUIRE_ERROR(parse(file_of(one(R"({"dtype":"F32","dtype":"F32","shape":[2],)"
                                         R"("data_offsets":[0,8]})"),
                                     f8)),
                       src, "'dtype' twice");
    CORE_REQUIRE_ERROR(parse(file_of(one("[1]"), f8)), src, "tensor 'w'", "not an object");
  }
  SECTION("dtype") {
    CORE_REQUIRE_ERROR(parse(file_of(one(R"({"shape":[2],"data_offsets":[0,8]})"), f8)), src,
                       "tensor 'w'", "no \"dtype\"");
    CORE_REQUIRE_ERROR(parse(file_of(one(R"({"dtype":4,"shape":[2],"data_offsets":[0,8]})"), f8)),
                       src, "tensor 'w'", "not a string");
    CORE_REQUIRE_ERROR(
        parse(file_of(one(R"({"dtype":"U8","shape":[8],"data_offsets":[0,8]})"), f8)), src,
        "tensor 'w'", "dtype U8 is not supported");
    CORE_REQUIRE_ERROR(
        parse(file_of(one(R"({"dtype":"F33","shape":[2],"data_offsets":[0,8]})"), f8)), src,
        "tensor 'w'", "unknown dtype 'F33'");
  }
  SECTION("shape") {
    auto with_shape = [&](const std::string& shape) {
      return parse(
          file_of(one(R"({"dtype":"F32","shape":)" + shape + R"(,"data_offsets":[0,8]})"), f8));
    };
    CORE_REQUIRE_ERROR(with_shape("2"), src, "tensor 'w'", "not an array");
    CORE_REQUIRE_ERROR(with_shape("[2.0]"), src, "tensor 'w'", "not an integer");
    CORE_REQUIRE_ERROR(with_shape("[\"2\"]"), src, "tensor 'w'", "not an integer");
    CORE_REQUIRE_ERROR(with_shape("[-2]"), src, "tensor 'w'", "negative");
    CORE_REQUIRE_ERROR(with_shape("[9223372036854775808]"), src, "tensor 'w'", "too large");
    CORE_REQUIRE_ERROR(with_shape("[4294967296,4294967296]"), src, "tensor 'w'", "overflow");
    CORE_REQUIRE_ERROR(with_shape("[2305843009213693952]"), src, "tensor 'w'", "overflow",
                       "in bytes");  // 2^61 * 4 bytes
    CORE_REQUIRE_ERROR(with_shape("[1,1,1,1,1,1,1,1,2]"), src, "tensor 'w'", "9 dims");
    CORE_REQUIRE_ERROR(with_shape("[3]"), src, "tensor 'w'", "hold 8 bytes", "needs 12");
  }
  SECTION("data_offsets") {
    auto with_offsets = [&](const std::string& off, const std::string& data) {
      return parse(file_of(one(R"({"dtype":"F32","shape":[2],"data_offsets":)" + off + "}"), data));
    };
    CORE_REQUIRE_ERROR(with_offsets("[0]", f8), src, "tensor 'w'", "not [begin, end]");
    CORE_REQUIRE_ERROR(with_offsets("[0,8,16]", f8), src, "tensor 'w'", "not [begin, end]");
    CORE_REQUIRE_ERROR(with_offsets("{\"a\":0}", f8), src, "tensor 'w'", "not [begin, end]");
    CORE_REQUIRE_ERROR(with_offsets("[-8,0]", f8), src, "tensor 'w'", "negative");
    CORE_REQUIRE_ERROR(with_offsets("[0,8.5]", f8), src, "tensor 'w'", "not an integer");
    CORE_REQUIRE_ERROR(with_offsets("[8,0]", f8), src, "tensor 'w'", "end before they begin");
    CORE_REQUIRE_ERROR(with_offsets("[0,8]", "1234"), src, "tensor 'w'", "run past the end");
    CORE_REQUIRE_ERROR(with_offsets("[8,16]", f8 + f8), src, "tensor 'w'", "gap of 8 bytes");
    CORE_REQUIRE_ERROR(with_offsets("[0,8]", f8 + "x"), src,
                       "1 bytes after the last tensor's data");
  }
  SECTION("overlapping and gapped ranges between tensors") {
    const std::string f16b(16, '\0');
    CORE_REQUIRE_ERROR(parse(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                     std::string(12, '\0'))),
                       src, "tensor 'b'", "overlap tensor 'a'");
    CORE_REQUIRE_ERROR(parse(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("c":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                     f16b)),
                       src, "tensor 'b'", "overlap tensor 'a'");
    CORE_REQUIRE_ERROR(parse(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                     R"("b":{"dtype":"F32","shape":[1],"data_offsets":[12,16]}})",
                                     f16b)),
                       src, "tensor 'b'", "gap of 4 bytes after tensor 'a'");
  }
  SECTION("__metadata__") {
    CORE_REQUIRE_ERROR(parse(file_of(R"({"__metadata__":["pt"]})", "")), src,
                       "__metadata__ is a JSON array");
    CORE_REQUIRE_ERROR(parse(file_of(R"({"__metadata__":{"format":1}})", "")), src,
                       "__metadata__ 'format' is 1");
    CORE_REQUIRE_ERROR(parse(file_of(R"({"__metadata__":null})", "")), src, "__metadata__");
  }
}

TEST_CASE("safetensors: load errors name the path", "[nn_io][safetensors]") {
  TempDir dir;
  const std::string missing = dir.file("missing.safetensors");
  CORE_REQUIRE_ERROR(strata::nn::load_safetensors(missing), missing, "No such file");
  CORE_REQUIRE_ERROR(strata::nn::load_safetensors(dir.file("")), "is a directory");

  // A file cut short: the last tensor in the layout runs past the end.
  const std::string path = dir.file("cut.safetensors");
  strata::nn::save_safetensors(
      path, {{"big", Tensor::zeros({4}, DType::f64)}, {"small", Tensor::zeros({3}, DType::f32)}});
  const std::string whole = read_all(path);
  write_all(path, whole.substr(0, whole.size() - 1));
  CORE_REQUIRE_ERROR(strata::nn::load_safetensors(path), path, "tensor 'small'",
                     "run past the end");
  write_all(path, whole.substr(0, 12));
  CORE_REQUIRE_ERROR(strata::nn::load_safetensors(path), path, "runs past the end of the file");
  write_all(path, whole.substr(0, 5));
  CORE_REQUIRE_ERROR(strata::nn::load_safetensors(path), path, "shorter than the 8-byte");
}

TEST_CASE("safetensors: save refuses bad input and never leaves a partial file",
          "[nn_io][safetensors]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const TensorDict good{{"w", Tensor::full({2}, 3.0)}};
  strata::nn::save_safetensors(path, good);
  const std::string before = read_all(path);

  CORE_REQUIRE_ERROR(strata::nn::save_safetensors(path, {{"__metadata__", Tensor::zeros({1})}}),
                     path, "__metadata__");
  CORE_REQUIRE_ERROR(strata::nn::save_safetensors(path, {{"u", Tensor()}}), path, "tensor 'u'",
                     "undefined");
  CORE_REQUIRE_ERROR(strata::nn::save_safetensors(path, {{"bad\xff", Tensor::zeros({1})}}), path,
                     "UTF-8");
  CHECK(read_all(path) == before);
  CHECK(dir.files() == std::vector<std::string>{"model.safetensors"});

  CORE_REQUIRE_ERROR(strata::nn::save_safetensors(dir.file("no/such/dir.safetensors"), good),
                     "no/such/dir.safetensors", "No such file");
}

TEST_CASE("safetensors: saving over a file keeps its mode and writes through a symlink",
          "[nn_io][safetensors]") {
  TempDir dir;
  const std::string real = dir.file("real.safetensors");
  const std::string link = dir.file("link.safetensors");
  strata::nn::save_safetensors(real, {{"w", Tensor::full({1}, 1.0)}});
  REQUIRE(::chmod(real.c_str(), 0640) == 0);
  REQUIRE(::symlink("real.safetensors", link.c_str()) == 0);
  strata::nn::save_safetensors(link, {{"w", Tensor::full({1}, 2.0)}});
  struct stat lst {
  }, st{};
  REQUIRE(::lstat(link.c_str(), &lst) == 0);
  CHECK(S_ISLNK(lst.st_mode));
  REQUIRE(::stat(real.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);
  CHECK(strata::nn::load_safetensors(real).tensors.at("w").item({0}) == 2.0);
}

// ---- config.json --------------------------------------------------------------

namespace {

ModelConfig parse_cfg(const std::string& text) {
  return strata::nn::parse_config(text, "cfg.json");
}

void require_same_config(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.arch == b.arch);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.intermediate_size == b.intermediate_size);
  CHECK(a.max_position_embeddings == b.max_position_embeddings);
  CHECK(a.norm_eps == b.norm_eps);
  CHECK(a.rope_theta == b.rope_theta);
  CHECK(a.tie_word_embeddings == b.tie_word_embeddings);
  CHECK(a.attention_bias == b.attention_bias);
  CHECK(a.mlp_bias == b.mlp_bias);
  CHECK(a.hidden_act == b.hidden_act);
}

// As transformers 4.x writes them (LlamaConfig / GPT2Config.save_pretrained).
const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 1, "eos_token_id": 2, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 512, "initializer_range": 0.02, "intermediate_size": 1408,
  "max_position_embeddings": 1024, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 8, "num_hidden_layers": 6, "num_key_value_heads": 2,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0,
  "tie_word_embeddings": false, "torch_dtype": "float32", "transformers_version": "4.46.0",
  "use_cache": true, "vocab_size": 256
})";
const char* kGpt2 = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
  "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12,
  "n_positions": 1024, "reorder_and_upcast_attn": false, "resid_pdrop": 0.1,
  "scale_attn_by_inverse_layer_idx": false, "scale_attn_weights": true,
  "summary_activation": null, "summary_first_dropout": 0.1, "summary_proj_to_labels": true,
  "summary_type": "cls_index", "summary_use_proj": true, "vocab_size": 50257
})";

}  // namespace

TEST_CASE("config: Llama and GPT-2 configs parse with transformers' defaults", "[nn_io][config]") {
  const ModelConfig l = parse_cfg(kLlama);
  ModelConfig want;
  want.arch = Arch::llama;
  want.vocab_size = 256;
  want.hidden_size = 512;
  want.num_layers = 6;
  want.num_heads = 8;
  want.num_kv_heads = 2;
  want.head_dim = 64;
  want.intermediate_size = 1408;
  want.max_position_embeddings = 1024;
  want.norm_eps = 1e-5;
  want.rope_theta = 500000.0;
  want.tie_word_embeddings = false;
  want.attention_bias = want.mlp_bias = false;
  want.hidden_act = "silu";
  require_same_config(l, want);

  const ModelConfig g = parse_cfg(kGpt2);
  ModelConfig wg;
  wg.arch = Arch::gpt2;
  wg.vocab_size = 50257;
  wg.hidden_size = 768;
  wg.num_layers = 12;
  wg.num_heads = wg.num_kv_heads = 12;
  wg.head_dim = 64;
  wg.intermediate_size = 4 * 768;  // n_inner null
  wg.max_position_embeddings = 1024;
  wg.norm_eps = 1e-5;
  wg.tie_word_embeddings = true;  // GPT-2 ties unless told otherwise
  wg.attention_bias = wg.mlp_bias = true;
  wg.hidden_act = "gelu_new";
  require_same_config(g, wg);

  // Keys left out: KV heads = heads, head_dim = hidden / heads, untied,
  // eps 1e-6, theta 1e4, 2048 positions, silu.
  const ModelConfig m = parse_cfg(R"({"model_type":"llama","vocab_size":32,"hidden_size":96,
      "num_hidden_layers":2,"num_attention_heads":6,"intermediate_size":200})");
  CHECK(m.num_kv_heads == 6);
  CHECK(m.head_dim == 16);
  CHECK(m.norm_eps == 1e-6);
  CHECK(m.rope_theta == 10000.0);
  CHECK(m.max_position_embeddings == 2048);
  CHECK(!m.tie_word_embeddings);
  CHECK(m.hidden_act == "silu");
  // transformers 5 keeps rope_theta in rope_parameters.
  CHECK(parse_cfg(R"({"model_type":"llama","vocab_size":32,"hidden_size":96,
      "num_hidden_layers":2,"num_attention_heads":6,"intermediate_size":200,
      "rope_parameters":{"rope_type":"default","rope_theta":1234.0}})")
            .rope_theta == 1234.0);
  // GPT-2 through transformers' attribute_map names, n_inner given.
  const ModelConfig a = parse_cfg(R"({"model_type":"gpt2","vocab_size":256,"hidden_size":64,
      "num_hidden_layers":2,"num_attention_heads":4,"max_position_embeddings":128,
      "n_inner":100,"tie_word_embeddings":false})");
  CHECK(a.hidden_size == 64);
  CHECK(a.num_layers == 2);
  CHECK(a.num_heads == 4);
  CHECK(a.max_position_embeddings == 128);
  CHECK(a.intermediate_size == 100);
  CHECK(!a.tie_word_embeddings);
}

TEST_CASE("config: config_to_json round trips both styles", "[nn_io][config]") {
  TempDir dir;
  ModelConfig gqa = parse_cfg(kLlama);
  gqa.tie_word_embeddings = true;
  gqa.attention_bias = true;
  gqa.hidden_act = "gelu";
  gqa.norm_eps = 1.0 / 3.0;  // every bit must survive
  for (const ModelConfig& c : {parse_cfg(kLlama), parse_cfg(kGpt2), gqa}) {
    const std::string text = strata::nn::config_to_json(c);
    INFO(text);
    require_same_config(parse_cfg(text), c);
    const std::string path = dir.file("config.json");
    strata::nn::save_config(path, c);
    require_same_config(strata::nn::load_config(path), c);
  }
  // GPT-2's own names.
  const std::string g = strata::nn::config_to_json(parse_cfg(kGpt2));
  for (const char* key : {"\"n_embd\": 768", "\"n_layer\": 12", "\"n_head\": 12",
                          "\"n_positions\": 1024", "\"n_inner\": 3072", "\"layer_norm_epsilon\""})
    CHECK(g.find(key) != std::string::npos);
  CHECK(g.find("hidden_size") == std::string::npos);

  // What GPT-2's keys cannot say is refused, not dropped.
  ModelConfig bad = parse_cfg(kGpt2);
  bad.num_kv_heads = 4;
  CORE_REQUIRE_ERROR(strata::nn::config_to_json(bad), "model_type", "gpt2");
  bad = parse_cfg(kGpt2);
  bad.mlp_bias = false;
  CORE_REQUIRE_ERROR(strata::nn::config_to_json(bad), "model_type", "biases");
  ModelConfig odd = parse_cfg(kLlama);
  odd.num_kv_heads = 3;
  CORE_REQUIRE_ERROR(strata::nn::save_config(dir.file("odd.json"), odd), "num_key_value_heads");
  CHECK(dir.files() == std::vector<std::string>{"config.json"});
}

TEST_CASE("config: each bad key is an Error naming the source and key", "[nn_io][config]") {
  // `base` with `key` set to `value` (a JSON fragment), or removed when
  // value is empty (not for the last key); a key not in `base` is added.
  auto with = [](std::string text, const std::string& key, const std::string& value) {
    const std::string needle = "\"" + key + "\": ";
    const std::size_t at = text.find(needle);
    if (at == std::string::npos) return "{\"" + key + "\": " + value + "," + text.substr(1);
    const std::size_t end = text.find_first_of(",\n", at + needle.size());
    if (value.empty()) return text.erase(at, end + 1 - at);
    return text.replace(at + needle.size(), end - at - needle.size(), value);
  };
  auto llama_with = [&](const std::string& key, const std::string& value) {
    return with(kLlama, key, value);
  };
  auto gpt2_with = [&](const std::string& key, const std::string& value) {
    return with(kGpt2, key, value);
  };
  const std::string src = "cfg.json";
  REQUIRE(parse_cfg(llama_with("vocab_size", "300")).vocab_size == 300);  // the helper works

  CORE_REQUIRE_ERROR(parse_cfg("{"), src, "not valid JSON");
  CORE_REQUIRE_ERROR(parse_cfg("[]"), src, "not an object");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("model_type", "")), src, "'model_type'", "missing");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("model_type", "\"bert\"")), src, "'bert'");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("model_type", "7")), src, "'model_type'", "not a string");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("intermediate_size", "")), src, "'intermediate_size'",
                     "missing");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("hidden_size", "null")), src, "'hidden_size'", "missing");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("hidden_size", "\"512\"")), src, "'hidden_size'",
                     "not an integer");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("hidden_size", "512.5")), src, "'hidden_size'",
                     "not an integer");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("hidden_size", "0")), src, "'hidden_size'", "not > 0");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("num_hidden_layers", "-1")), src, "'num_hidden_layers'",
                     "not > 0");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("num_attention_heads", "0")), src,
                     "'num_attention_heads'", "not > 0");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("num_key_value_heads", "3")), src,
                     "'num_key_value_heads'", "does not divide");
  CHECK(parse_cfg(llama_with("head_dim", "")).head_dim == 64);  // 512 / 8
  CORE_REQUIRE_ERROR(parse_cfg(with(llama_with("head_dim", ""), "hidden_size", "500")), src,
                     "'num_attention_heads'", "does not divide hidden_size 500");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("num_attention_heads", "7")), src,
                     "'num_key_value_heads'", "does not divide");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("head_dim", "63")), src, "'head_dim'", "not even");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("intermediate_size", "true")), src, "'intermediate_size'",
                     "not an integer");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("rms_norm_eps", "\"1e-5\"")), src, "'rms_norm_eps'",
                     "not a number");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("rms_norm_eps", "0")), src, "'rms_norm_eps'", "positive");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("rope_theta", "-1")), src, "'rope_theta'", "positive");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("rope_scaling", R"({"type":"linear","factor":2})")), src,
                     "'rope_scaling'", "not supported");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("rope_parameters", R"({"rope_type":"yarn"})")), src,
                     "'rope_parameters'", "yarn");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("tie_word_embeddings", "1")), src,
                     "'tie_word_embeddings'", "not true or false");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("attention_bias", "\"no\"")), src, "'attention_bias'");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("mlp_bias", "0")), src, "'mlp_bias'");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("hidden_act", "\"relu\"")), src, "'hidden_act'",
                     "'relu' is not supported");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("max_position_embeddings", "0")), src,
                     "'max_position_embeddings'");
  CORE_REQUIRE_ERROR(parse_cfg(llama_with("vocab_size", "18446744073709551615")), src,
                     "'vocab_size'", "too large");

  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("n_head", "5")), src, "'n_head'", "does not divide");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("n_embd", "\"768\"")), src, "'n_embd'", "not an integer");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("hidden_size", "512")), src, "'n_embd'", "alias");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("n_inner", "0")), src, "'n_inner'", "not > 0");
  CHECK(parse_cfg(gpt2_with("layer_norm_epsilon", "null")).norm_eps == 1e-5);  // the default
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("activation_function", "\"relu\"")), src,
                     "'activation_function'", "not supported");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("scale_attn_weights", "false")), src,
                     "'scale_attn_weights'");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("scale_attn_by_inverse_layer_idx", "true")), src,
                     "'scale_attn_by_inverse_layer_idx'");
  CORE_REQUIRE_ERROR(parse_cfg(gpt2_with("tie_word_embeddings", "\"yes\"")), src,
                     "'tie_word_embeddings'");

  TempDir dir;
  CORE_REQUIRE_ERROR(strata::nn::load_config(dir.file("none.json")), "none.json", "No such file");
}
