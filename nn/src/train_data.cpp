// The training data: token streams from text or .npy files, and the order in
// which sequences are read from them (strata/nn/train.hpp).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>

#include "strata/detail/file_io.hpp"
#include "strata/error.hpp"
#include "strata/nn/train.hpp"
#include "strata/npy.hpp"

namespace strata::nn {
namespace {

namespace fs = std::filesystem;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// NumPy has uint16 token files (nanoGPT's and llm.c's), which load_npy does
// not read: their header is parsed here, the rest goes through load_npy.
bool is_u16_npy(const std::vector<std::uint8_t>& b, std::size_t& data_at, std::int64_t& count,
                const std::string& path) {
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) return false;
  const std::size_t len_bytes = b[6] == 1 ? 2 : 4;
  if (b.size() < 8 + len_bytes) return false;
  std::size_t hlen = 0;
  for (std::size_t k = 0; k < len_bytes; ++k) hlen |= std::size_t{b[8 + k]} << (8 * k);
  if (b.size() < 8 + len_bytes + hlen) return false;
  const std::string header(reinterpret_cast<const char*>(b.data()) + 8 + len_bytes, hlen);
  if (header.find("'<u2'") == std::string::npos && header.find("'|u2'") == std::string::npos)
    return false;
  // C or Fortran order: the ids are read flat either way only for one
  // dimension; a Fortran-order matrix would be read in another order.
  const auto lp = header.find('('), rp = header.find(')');
  if (lp == std::string::npos || rp == std::string::npos || rp < lp)
    throw Error("load_tokens '" + path + "': malformed .npy header");
  const std::string dims = header.substr(lp + 1, rp - lp - 1);
  std::int64_t n = 1, rank = 0;
  for (std::size_t p = 0; p < dims.size();) {
    if (dims[p] < '0' || dims[p] > '9') {
      ++p;
      continue;
    }
    std::size_t used = 0;
    const long long d = std::stoll(dims.substr(p), &used);
    n *= d;
    ++rank;
    p += used;
  }
  if (rank > 1 && header.find("'fortran_order': True") != std::string::npos)
    throw Error("load_tokens '" + path + "': a Fortran-order uint16 .npy of " +
                std::to_string(rank) + " dims is not supported (save it C-order or flat)");
  data_at = 8 + len_bytes + hlen;
  count = n;
  if (b.size() - data_at != static_cast<std::size_t>(n) * 2)
    throw Error("load_tokens '" + path + "': the data holds " + std::to_string(b.size() - data_at) +
                " bytes where the header's shape needs " + std::to_string(n * 2));
  return true;
}

void load_npy_ids(const std::string& path, std::vector<std::int32_t>& out) {
  const std::vector<std::uint8_t> bytes = detail::read_file_bytes(path, "load_tokens");
  std::size_t at = 0;
  std::int64_t n = 0;
  if (is_u16_npy(bytes, at, n, path)) {
    out.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k)
      out[static_cast<std::size_t>(k)] =
          static_cast<std::int32_t>(bytes[at + 2 * k] | (bytes[at + 2 * k + 1] << 8));
    return;
  }
  const Tensor t = load_npy(path, "load_tokens");
  if (t.dtype() != DType::i32 && t.dtype() != DType::i64)
    throw Error("load_tokens '" + path + "': token ids must be int32, int64 or uint16, not " +
                std::string(dtype_name(t.dtype())));
  const std::vector<std::int64_t> v = t.contiguous().to_vector<std::int64_t>();
  out.resize(v.size());
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (v[k] < 0 || v[k] > std::numeric_limits<std::int32_t>::max())
      throw Error("load_tokens '" + path + "': token id " + std::to_string(v[k]) + " at " +
                  std::to_string(k) + " is outside [0, 2^31)");
    out[k] = static_cast<std::int32_t>(v[k]);
  }
}

void append_text(const std::string& path, std::vector<std::int32_t>& out, bool newline) {
  const std::vector<std::uint8_t> bytes = detail::read_file_bytes(path, "load_tokens");
  out.reserve(out.size() + bytes.size() + 1);
  for (std::uint8_t c : bytes) out.push_back(c);
  if (newline && !bytes.empty() && bytes.back() != '\n') out.push_back('\n');
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t TokenData::hash() const {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::int32_t id : ids)
    for (int k = 0; k < 4; ++k) {
      h ^= (static_cast<std::uint32_t>(id) >> (8 * k)) & 0xffu;
      h *= 0x100000001b3ULL;
    }
  return h;
}

TokenData load_tokens(const std::string& path) {
  TokenData d;
  d.path = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error("load_tokens '" + path + "': no such file or folder");
  if (fs::is_directory(st)) {
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path))
      if (e.is_regular_file() && ends_with(e.path().filename().string(), ".txt"))
        files.push_back(e.path().string());
    if (files.empty()) throw Error("load_tokens '" + path + "': the folder holds no .txt file");
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) append_text(f, d.ids, true);
  } else if (ends_with(path, ".npy")) {
    load_npy_ids(path, d.ids);
  } else {
    append_text(path, d.ids, false);
  }
  if (d.ids.empty()) throw Error("load_tokens '" + path + "': no tokens (empty data)");
  return d;
}

BatchOrder::BatchOrder(std::int64_t n, std::int64_t seq_len, DataOrder order, std::uint64_t seed)
    : n_(n), t_(seq_len), order_(order), seed_(seed) {
  if (seq_len < 1) throw Error("BatchOrder: seq_len " + std::to_string(seq_len) + " must be >= 1");
  if (n < seq_len + 2)
    throw Error("BatchOrder: sequences of " + std::to_string(seq_len) + " + 1 tokens need " +
                std::to_string(seq_len + 2) + " training tokens; the data has " +
                std::to_string(n));
}

std::int64_t BatchOrder::offset(std::int64_t i) const {
  if (order_ == DataOrder::sequential) {
    // (i T) mod (n - T - 1) without overflowing i T.
    const auto m = static_cast<unsigned __int128>(n_ - t_ - 1);
    return static_cast<std::int64_t>(static_cast<unsigned __int128>(i) * t_ % m);
  }
  // W windows of T + 1 tokens fit at any phase below min(T, n - W T):
  // the last one ends at phase + (W - 1) T + T + 1 <= n.
  const std::int64_t w = std::max<std::int64_t>(1, (n_ - t_) / t_);
  const std::int64_t phases = std::min(t_, n_ - w * t_);
  const std::int64_t e = i / w;
  if (e != epoch_) {
    perm_.resize(static_cast<std::size_t>(w));
    for (std::int64_t k = 0; k < w; ++k) perm_[static_cast<std::size_t>(k)] = k;
    std::mt19937_64 rng(splitmix64(seed_ + static_cast<std::uint64_t>(e)));
    phase_ = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(phases));
    for (std::int64_t k = w - 1; k > 0; --k) {
      const auto r = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(k + 1));
      std::swap(perm_[static_cast<std::size_t>(k)], perm_[static_cast<std::size_t>(r)]);
    }
    epoch_ = e;
  }
  return phase_ + perm_[static_cast<std::size_t>(i % w)] * t_;
}

}  // namespace strata::nn
