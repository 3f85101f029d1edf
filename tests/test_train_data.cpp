// Training data (strata/nn/train.hpp): the token sources, the sequential
// order against its documented formula computed another way, the shuffled
// order's epochs, and the batches a step actually trains on.
#include <fstream>
#include <random>
#include <set>

#include "catch.hpp"
#include "strata/cross_entropy.hpp"
#include "strata/npy.hpp"
#include "test_train_util.hpp"

using namespace strata;
using train_test::TempDir;

namespace {

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("train: the sequential order is (i T) mod (n - T - 1)", "[train]") {
  // The formula walked incrementally: each sequence starts T after the last,
  // wrapping at m = n - T - 1; no multiplication, no 128-bit product.
  for (const auto& [n, t] : {std::pair<std::int64_t, std::int64_t>{100, 16}, {18, 16}, {1000, 7}}) {
    const nn::BatchOrder order(n, t, nn::DataOrder::sequential, 0);
    const std::int64_t m = n - t - 1;
    std::int64_t expect = 0;
    for (std::int64_t i = 0; i < 500; ++i) {
      INFO("n " << n << " T " << t << " i " << i);
      REQUIRE(order.offset(i) == expect);
      REQUIRE(order.offset(i) + t + 1 <= n);
      expect += t;
      while (expect >= m) expect -= m;
    }
  }
  // Far sequences: (i T) overflows 64 bits for i near 2^62; the formula is exact.
  const nn::BatchOrder order(1000, 16, nn::DataOrder::sequential, 0);
  const std::int64_t i = std::int64_t{1} << 62;  // i T = 2^66
  // 2^66 mod 983 by repeated doubling.
  std::int64_t r = 1;
  for (int k = 0; k < 66; ++k) r = r * 2 % 983;
  CHECK(order.offset(i) == r);
}

TEST_CASE("train: the shuffled order visits every window once per epoch, seeded", "[train]") {
  const std::int64_t n = 200, t = 8, w = (n - t) / t;
  const nn::BatchOrder a(n, t, nn::DataOrder::shuffled, 7), b(n, t, nn::DataOrder::shuffled, 7),
      c(n, t, nn::DataOrder::shuffled, 8);
  std::vector<std::int64_t> ea, eb;
  std::set<std::int64_t> phases;
  bool differs = false;
  for (std::int64_t e = 0; e < 16; ++e) {
    std::set<std::int64_t> seen;
    const std::int64_t phase = a.offset(e * w) % t;
    for (std::int64_t k = 0; k < w; ++k) {
      const std::int64_t i = e * w + k;
      const std::int64_t off = a.offset(i);
      CHECK(off % t == phase);  // one grid of windows per epoch
      CHECK(off + t + 1 <= n);
      seen.insert(off);
      CHECK(b.offset(i) == off);  // same seed, same order
      differs = differs || c.offset(i) != off;
      if (e < 2) (e == 0 ? ea : eb).push_back(off);
    }
    CHECK(static_cast<std::int64_t>(seen.size()) == w);
    phases.insert(phase);
  }
  CHECK(differs);
  CHECK(ea != eb);              // each epoch its own permutation
  CHECK(phases.size() >= 4);    // and its own alignment, over the epochs
  CHECK(a.offset(3) == ea[3]);  // random access gives what sequential access gave
}

// The documented formula (strata/nn/train.hpp), written out here: the
// first draw the phase, the next ones a Fisher-Yates shuffle.
TEST_CASE("train: the shuffled order is the documented formula", "[train]") {
  const auto splitmix64 = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  for (const auto& [n, t] : {std::pair<std::int64_t, std::int64_t>{200, 8}, {13, 8}, {1000, 31}}) {
    const std::uint64_t seed = 11;
    const nn::BatchOrder order(n, t, nn::DataOrder::shuffled, seed);
    const std::int64_t w = std::max<std::int64_t>(1, (n - t) / t);
    for (std::int64_t e = 0; e < 3; ++e) {
      std::mt19937_64 rng(splitmix64(seed + static_cast<std::uint64_t>(e)));
      const auto phase =
          static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(std::min(t, n - w * t)));
      std::vector<std::int64_t> perm(static_cast<std::size_t>(w));
      for (std::int64_t k = 0; k < w; ++k) perm[static_cast<std::size_t>(k)] = k;
      for (std::int64_t k = w - 1; k > 0; --k)
        std::swap(perm[static_cast<std::size_t>(k)],
                  perm[rng() % static_cast<std::uint64_t>(k + 1)]);
      for (std::int64_t k = 0; k < w; ++k) {
        INFO("n " << n << " T " << t << " epoch " << e << " k " << k);
        CHECK(order.offset(e * w + k) == phase + perm[static_cast<std::size_t>(k)] * t);
        CHECK(order.offset(e * w + k) + t + 1 <= n);
      }
    }
  }
}

TEST_CASE("train: token data from text, a folder of .txt and .npy ids", "[train]") {
  TempDir dir("data");
  write(dir / "a.txt", "ab");
  write(dir / "z.md", "ignored");
  std::filesystem::create_directories(dir.path / "texts");
  write(dir / "texts/2.txt", "cd\n");
  write(dir / "texts/1.txt", "xy");
  write(dir / "texts/skip.bin", "no");
  CHECK(nn::load_tokens(dir / "a.txt").ids == std::vector<std::int32_t>{'a', 'b'});
  // Sorted by name, a newline after a file that lacks one.
  CHECK(nn::load_tokens(dir / "texts").ids ==
        std::vector<std::int32_t>{'x', 'y', '\n', 'c', 'd', '\n'});
  save_npy(dir / "i32.npy", Tensor::from_vector(std::vector<std::int32_t>{5, 0, 255}, {3}));
  save_npy(dir / "i64.npy", Tensor::from_vector(std::vector<std::int64_t>{1, 2, 3, 4}, {2, 2}));
  CHECK(nn::load_tokens(dir / "i32.npy").ids == std::vector<std::int32_t>{5, 0, 255});
  CHECK(nn::load_tokens(dir / "i64.npy").ids == std::vector<std::int32_t>{1, 2, 3, 4});
  // uint16 (nanoGPT's token files): the header written by hand, as NumPy does.
  std::string header = "{'descr': '<u2', 'fortran_order': False, 'shape': (3,), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string u16 = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  for (int v : {65535, 1, 300}) u16 += std::string{char(v & 0xff), char(v >> 8)};
  write(dir / "u16.npy", u16);
  CHECK(nn::load_tokens(dir / "u16.npy").ids == std::vector<std::int32_t>{65535, 1, 300});

  write(dir / "empty.txt", "");
  save_npy(dir / "neg.npy", Tensor::from_vector(std::vector<std::int64_t>{3, -1}, {2}));
  save_npy(dir / "f32.npy", Tensor::from_vector(std::vector<float>{1.f}, {1}));
  std::filesystem::create_directories(dir.path / "none");
  CHECK_THROWS_WITH(nn::load_tokens(dir / "missing.txt"), ContainsText("no such file"));
  CHECK_THROWS_WITH(nn::load_tokens(dir / "empty.txt"), ContainsText("no tokens"));
  CHECK_THROWS_WITH(nn::load_tokens(dir / "none"), ContainsText("no .txt file"));
  CHECK_THROWS_WITH(nn::load_tokens(dir / "neg.npy"), ContainsText("token id -1 at 1"));
  CHECK_THROWS_WITH(nn::load_tokens(dir / "f32.npy"), ContainsText("int32, int64 or uint16"));
}

TEST_CASE("train: step s trains on sequences (s K + j) B + b, its loss their mean", "[train]") {
  // Each step's reported loss against a forward of the sequences the formula
  // names, built here from the ids, before the step updates the model.
  nn::DecoderLM model = train_test::tiny_model();
  const nn::TokenData data = train_test::tiny_text(300);
  nn::TrainOptions o = train_test::tiny_options(4);
  o.batch = 3;
  o.accum = 2;
  o.val_fraction = 0.2;  // the order runs over the first 240 tokens only
  nn::Trainer tr(model, data, o);
  const std::int64_t n = 240, t = o.seq_len, m = n - t - 1;
  REQUIRE(tr.train_tokens() == n);
  for (std::int64_t s = 0; s < 4; ++s) {
    double expect = 0;
    for (std::int64_t j = 0; j < o.accum; ++j) {
      std::vector<std::int64_t> in, tgt;
      for (std::int64_t b = 0; b < o.batch; ++b) {
        const std::int64_t at = ((s * o.accum + j) * o.batch + b) * t % m;
        for (std::int64_t k = 0; k < t; ++k) {
          in.push_back(data.ids[static_cast<std::size_t>(at + k)]);
          tgt.push_back(data.ids[static_cast<std::size_t>(at + k + 1)]);
        }
      }
      const Tensor logits = model.forward(Tensor::from_vector(in, {o.batch, t}));
      expect += cross_entropy(logits, Tensor::from_vector(tgt, {o.batch, t})).item<double>();
    }
    expect /= static_cast<double>(o.accum);
    const nn::StepStats st = tr.step();
    INFO("step " << s);
    CHECK(st.step == s + 1);
    CHECK(std::abs(st.loss - expect) <= 1e-5 * expect);
  }
}
