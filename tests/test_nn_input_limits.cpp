// Model files beyond any real one's limits. config.json and safetensors
// headers whose values are nested deeper, or are longer, than any real
// file's: each is refused with a strata::Error that names the key and
// describes the value briefly (quoting such a value with nlohmann's dump()
// recursed once per level and overflowed the stack at ~100,000 levels:
// nn/src/json_brief.hpp). Configs whose sizes would wrap the widths the
// model derives from them, or whose layers cannot be held: refused by
// DecoderLM before anything is allocated past the first tensors.
#include <cstdint>
#include <string>

#include "catch.hpp"
#include "strata/nn/config.hpp"
#include "strata/nn/decoder.hpp"
#include "strata/nn/safetensors.hpp"
#include "test_core_util.hpp"
#include "test_nn_util.hpp"

namespace {

constexpr int kDeep = 300'000;  // a 600 KB value; 100,000 levels crashed

// [[[...0...]]] nested `depth` deep.
std::string nested(int depth) { return std::string(depth, '[') + "0" + std::string(depth, ']'); }

std::string llama_with(const std::string& key, const std::string& value) {
  return R"({"model_type":"llama","vocab_size":64,"hidden_size":32,"num_hidden_layers":1,)"
         R"("num_attention_heads":4,"intermediate_size":64,")" +
         key + "\":" + value + "}";
}

// `body` as a JSON string (its bytes as they are).
std::string quoted(const std::string& body) {
  std::string s(1, '"');
  s += body;
  s += '"';
  return s;
}

std::string config_error(const std::string& text) {
  return core_test::error_of([&] { (void)strata::nn::parse_config(text, "deep.json"); });
}

// A safetensors file: the header's 8-byte length, the header, `data`.
std::string safetensors_file(const std::string& header, const std::string& data) {
  std::string f(8, '\0');
  std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return f + header + data;
}

std::string safetensors_error(const std::string& header) {
  const std::string f = safetensors_file(header, std::string(8, '\0'));
  return core_test::error_of(
      [&] { (void)strata::nn::parse_safetensors(f.data(), f.size(), "deep.safetensors"); });
}

}  // namespace

TEST_CASE("config: values nested deep are refused, not quoted", "[nn_io][config]") {
  const std::string deep = nested(kDeep);
  // One key of each kind the reader checks: integer, number, boolean,
  // string, object (rope_parameters); keys absent from the reader's list
  // are ignored however deep.
  for (const char* key : {"num_key_value_heads", "rms_norm_eps", "tie_word_embeddings",
                          "hidden_act", "rope_parameters"}) {
    INFO("key " << key);
    const std::string msg = config_error(llama_with(key, deep));
    CHECK(msg.find(std::string("key '") + key + "'") != std::string::npos);
    CHECK(msg.find("a JSON array of 1 element") != std::string::npos);
    CHECK(msg.size() < 300);
  }
  CHECK(config_error(llama_with("unused_key", deep)) == "<no error>");
  // GPT-2's aliases: both deep, or one deep and one a number.
  const std::string gpt2 = R"({"model_type":"gpt2","vocab_size":64,"n_layer":1,"n_head":4,)";
  for (const std::string& pair :
       {R"("n_embd":)" + deep + R"(,"hidden_size":)" + deep, R"("n_embd":32,"hidden_size":)" + deep,
        R"("n_embd":)" + deep + R"(,"hidden_size":32)"}) {
    const std::string msg = config_error(gpt2 + pair + "}");
    CHECK(msg.find("'n_embd'") != std::string::npos);
    CHECK(msg.find("a JSON array of 1 element") != std::string::npos);
  }
}

TEST_CASE("config: long values are quoted cut short", "[nn_io][config]") {
  // 100,000 characters, and a cut through a two-byte UTF-8 character (63
  // ASCII bytes, then U+00E9): the message stays short and is still made.
  const std::string msg = config_error(llama_with("hidden_act", quoted(std::string(100'000, 'x'))));
  CHECK(msg.find("'hidden_act'") != std::string::npos);
  CHECK(msg.find("...") != std::string::npos);
  CHECK(msg.size() < 300);
  const std::string cut =
      config_error(llama_with("hidden_act", quoted(std::string(63, 'x') + "\xc3\xa9xx")));
  CHECK(cut.find("'hidden_act'") != std::string::npos);
  CHECK(cut.find("is not supported") != std::string::npos);
  const std::string wide =
      config_error(llama_with("num_key_value_heads", "[111111111,1,1,1,1,1,1,1,1,1]"));
  CHECK(wide.find("a JSON array of 10 elements") != std::string::npos);
  // Small flat values are still quoted whole.
  CHECK(config_error(llama_with("num_key_value_heads", "[1,2]")).find("is [1,2], not an integer") !=
        std::string::npos);
}

TEST_CASE("safetensors: header values nested deep are refused, not quoted",
          "[nn_io][safetensors]") {
  const std::string deep = nested(kDeep);
  const std::string ok_shape = R"("shape":[2],)", ok_offsets = R"("data_offsets":[0,8])";
  struct Case {
    std::string header, names;
  };
  const Case cases[] = {
      {R"({"w":{"dtype":)" + deep + "," + ok_shape + ok_offsets + "}}", "dtype is"},
      {R"({"w":{"dtype":"F32","shape":)" + deep + "," + ok_offsets + "}}", "shape dim is"},
      {R"({"w":{"dtype":"F32","shape":[)" + deep + "]," + ok_offsets + "}}", "shape dim is"},
      {R"({"w":{"dtype":"F32",)" + ok_shape + R"("data_offsets":)" + deep + "}}",
       "data_offsets is"},
      {R"({"w":{"dtype":"F32",)" + ok_shape + R"("data_offsets":[)" + deep + ",8]}}",
       "data_offsets begin is"},
      {R"({"__metadata__":{"format":)" + deep + "}}", "'format' is"},
  };
  for (const Case& c : cases) {
    INFO("expected: " << c.names);
    const std::string msg = safetensors_error(c.header);
    CHECK(msg.find(c.names) != std::string::npos);
    CHECK(msg.find("a JSON array of 1 element") != std::string::npos);
    CHECK(msg.size() < 300);
  }
}

TEST_CASE("DecoderLM: config sizes that would wrap a derived width are refused",
          "[nn_io][config]") {
  const strata::nn::ModelConfig c = nn_test::tiny_llama();
  const auto error_of = [](const strata::nn::ModelConfig& cfg) {
    return core_test::error_of([&] { strata::nn::DecoderLM m(cfg); });
  };
  REQUIRE(error_of(c) == "<no error>");
  // 2 * intermediate_size (the fused gate/up projection) past int64.
  strata::nn::ModelConfig big = c;
  big.intermediate_size = std::int64_t(1) << 62;
  std::string msg = error_of(big);
  CHECK(msg.find("DecoderLM") != std::string::npos);
  CHECK(msg.find("2 * intermediate_size") != std::string::npos);
  // (num_heads + 2 num_kv_heads) * head_dim (the fused q/k/v projection).
  big = c;
  big.head_dim = std::int64_t(1) << 62;
  msg = error_of(big);
  CHECK(msg.find("qkv width") != std::string::npos);
  big = c;
  big.num_heads = big.num_kv_heads = std::int64_t(1) << 62;
  msg = error_of(big);
  CHECK(msg.find("num_heads + 2 num_kv_heads") != std::string::npos);
  // More layers than memory holds: a strata::Error, not std::bad_alloc.
  big = c;
  big.num_layers = std::int64_t(1) << 60;
  msg = error_of(big);
  CHECK(msg.find("num_hidden_layers") != std::string::npos);
}
