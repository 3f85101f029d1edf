// safetensors reader and writer, following the reference implementation
// (huggingface/safetensors, safetensors/src/tensor.rs): the same checks on
// read (header at most 100 MB, data ranges contiguous from 0 to the end of
// the file, byte sizes equal to numel * itemsize), the same layout on write.
#include "strata/nn/safetensors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <vector>

#include "json_brief.hpp"
#include "strata/detail/checked_math.hpp"
#include "strata/detail/file_io.hpp"

namespace strata::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is copied as is");

using json = nlohmann::json;

constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;  // the reference's limit

// `order` is the rank in the reference's Dtype enum (increasing alignment):
// its writer lays tensors out by descending order, then by name, so that
// every tensor's data is aligned to its itemsize in a mapped file.
struct FileDType {
  const char* name;
  DType dtype;
  int order;
};
constexpr FileDType kDTypes[] = {
    {"BOOL", DType::boolean, 0}, {"F16", DType::f16, 1}, {"BF16", DType::bf16, 2},
    {"I32", DType::i32, 3},      {"F32", DType::f32, 4}, {"F64", DType::f64, 5},
    {"I64", DType::i64, 6},
};
constexpr const char* kSupportedList = "F32, F64, F16, BF16, I32, I64, BOOL";
// Valid in the format, not in Strata: named as unsupported, not as unknown.
constexpr const char* kOtherFileDTypes[] = {"U8",      "I8",      "I16",     "U16",     "U32",
                                            "U64",     "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4",
                                            "F6_E2M3", "F6_E3M2", "C64"};

const FileDType& file_dtype(DType dt) {
  for (const FileDType& f : kDTypes)
    if (f.dtype == dt) return f;
  fail("save_safetensors", "dtype ", dtype_name(dt), " has no safetensors name");
}

// One tensor as the header describes it; offsets relative to the data
// section (which starts right after the header).
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin, end;
};

struct Header {
  std::vector<Entry> entries;  // sorted by offset
  std::map<std::string, std::string> metadata;
};

std::string where(const std::string& source) { return "'" + source + "'"; }
std::string where(const std::string& source, const std::string& tensor) {
  return "'" + source + "': tensor '" + tensor + "'";
}

// Checks the 8-byte length against the 100 MB limit and the file size and
// returns it; `first` holds min(8, file_size) bytes.
std::uint64_t header_length(const std::uint8_t* first, std::uint64_t file_size,
                            const std::string& source) {
  STRATA_CHECK(file_size >= 8, "safetensors", where(source), ": file is ", file_size,
               " bytes, shorter than the 8-byte header length");
  std::uint64_t n = 0;
  std::memcpy(&n, first, 8);
  STRATA_CHECK(n <= kMaxHeaderBytes, "safetensors", where(source), ": header length ", n,
               " exceeds the 100 MB limit");
  STRATA_CHECK(n <= file_size - 8, "safetensors", where(source), ": header length ", n,
               " runs past the end of the file (", file_size, " bytes)");
  return n;
}

// nlohmann keeps the last of duplicate keys; the reference refuses them.
// The parser callback sees every key with its object's depth.
json parse_json(const char* text, std::size_t n, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (ev == json::parse_event_t::object_end) {
      open_objects.pop_back();
    } else if (ev == json::parse_event_t::key && duplicate.empty() && !open_objects.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) duplicate = key;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text, text + n, cb);
  } catch (const json::exception& e) {
    fail("safetensors", where(source), ": header is not valid JSON (", e.what(), ")");
  }
  STRATA_CHECK(duplicate.empty(), "safetensors", where(source), ": header names '", duplicate,
               "' twice");
  STRATA_CHECK(j.is_object(), "safetensors", where(source), ": header is a JSON ", j.type_name(),
               ", not an object");
  return j;
}

// A non-negative JSON integer that fits int64, or an error naming `what`.
std::int64_t non_negative(const json& v, const std::string& ctx, const char* what) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    STRATA_CHECK(u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                 "safetensors", ctx, ": ", what, " ", u, " is too large");
    return static_cast<std::int64_t>(u);
  }
  STRATA_CHECK(v.is_number_integer(), "safetensors", ctx, ": ", what, " is ", detail::json_brief(v),
               ", not an integer");
  const auto i = v.get<std::int64_t>();
  STRATA_CHECK(i >= 0, "safetensors", ctx, ": ", what, " is negative (", i, ")");
  return i;
}

const json& member(const json& obj, const char* key, const std::string& ctx) {
  const auto it = obj.find(key);
  STRATA_CHECK(it != obj.end(), "safetensors", ctx, ": no \"", key, "\"");
  return *it;
}

DType entry_dtype(const json& v, const std::string& ctx) {
  STRATA_CHECK(v.is_string(), "safetensors", ctx, ": dtype is ", detail::json_brief(v),
               ", not a string");
  const std::string& s = v.get_ref<const std::string&>();
  for (const FileDType& f : kDTypes)
    if (s == f.name) return f.dtype;
  for (const char* other : kOtherFileDTypes)
    STRATA_CHECK(s != other, "safetensors", ctx, ": dtype ", s, " is not supported (Strata reads ",
                 kSupportedList, ")");
  fail("safetensors", ctx, ": unknown dtype '", detail::text_brief(s), "' (Strata reads ",
       kSupportedList, ")");
}

Entry parse_entry(const std::string& name, const json& v, std::uint64_t data_size,
                  const std::string& source) {
  const std::string ctx = where(source, name);
  STRATA_CHECK(v.is_object(), "safetensors", ctx, ": entry is a JSON ", v.type_name(),
               ", not an object");
  Entry e{name, entry_dtype(member(v, "dtype", ctx), ctx), {}, 0, 0};

  const json& shape = member(v, "shape", ctx);
  STRATA_CHECK(shape.is_array(), "safetensors", ctx, ": shape is ", detail::json_brief(shape),
               ", not an array");
  STRATA_CHECK(shape.size() <= static_cast<std::size_t>(kMaxDims), "safetensors", ctx,
               ": shape has ", shape.size(), " dims (Strata tensors have at most ", kMaxDims, ")");
  const std::string op = "safetensors: " + ctx;  // checked math's message prefix
  std::int64_t numel = 1;
  for (const json& d : shape) {
    e.shape.push_back(non_negative(d, ctx, "shape dim"));
    numel = strata::detail::mul_or_fail(numel, e.shape.back(), op.c_str(), " (the shape's size)");
  }
  const std::int64_t nbytes =
      strata::detail::mul_or_fail(numel, static_cast<std::int64_t>(itemsize(e.dtype)), op.c_str(),
                                  " (the shape's size in bytes)");

  const json& off = member(v, "data_offsets", ctx);
  STRATA_CHECK(off.is_array() && off.size() == 2, "safetensors", ctx, ": data_offsets is ",
               detail::json_brief(off), ", not [begin, end]");
  e.begin = static_cast<std::uint64_t>(non_negative(off[0], ctx, "data_offsets begin"));
  e.end = static_cast<std::uint64_t>(non_negative(off[1], ctx, "data_offsets end"));
  STRATA_CHECK(e.begin <= e.end, "safetensors", ctx, ": data_offsets [", e.begin, ", ", e.end,
               "] end before they begin");
  STRATA_CHECK(e.end <= data_size, "safetensors", ctx, ": data_offsets [", e.begin, ", ", e.end,
               "] run past the end of the data (", data_size, " bytes; file truncated?)");
  STRATA_CHECK(e.end - e.begin == static_cast<std::uint64_t>(nbytes), "safetensors", ctx,
               ": data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin,
               " bytes but shape ", shape_str(e.shape), " of ", dtype_name(e.dtype), " needs ",
               nbytes);
  return e;
}

// Every check of the header against a data section of `data_size` bytes.
Header parse_header(const char* text, std::size_t n, std::uint64_t data_size,
                    const std::string& source) {
  const json j = parse_json(text, n, source);
  Header h;
  for (const auto& [key, v] : j.items()) {
    if (key == "__metadata__") {
      STRATA_CHECK(v.is_object(), "safetensors", where(source), ": __metadata__ is a JSON ",
                   v.type_name(), ", not an object of strings");
      for (const auto& [mk, mv] : v.items()) {
        STRATA_CHECK(mv.is_string(), "safetensors", where(source), ": __metadata__ '", mk, "' is ",
                     detail::json_brief(mv), ", not a string");
        h.metadata.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    h.entries.push_back(parse_entry(key, v, data_size, source));
  }
  // The data ranges tile [0, data_size): sorted by offset, each starts where
  // the previous one ended (as the reference requires).
  std::sort(h.entries.begin(), h.entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t at = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : h.entries) {
    const std::string ctx = where(source, e.name);
    STRATA_CHECK(e.begin >= at, "safetensors", ctx, ": data_offsets [", e.begin, ", ", e.end,
                 "] overlap tensor '", prev ? prev->name : "", "' (which ends at ", at, ")");
    STRATA_CHECK(e.begin == at, "safetensors", ctx, ": data_offsets [", e.begin, ", ", e.end,
                 "] leave a gap of ", e.begin - at, " bytes after ",
                 prev ? "tensor '" + prev->name + "'" : std::string("the header"));
    at = e.end;
    prev = &e;
  }
  STRATA_CHECK(at == data_size, "safetensors", where(source), ": ", data_size - at,
               " bytes after the last tensor's data are not described by the header");
  return h;
}

// Fresh, contiguous CPU tensor; the file's bytes need not be aligned.
Tensor make_tensor(const Entry& e, const std::string& source) {
  try {
    return Tensor::empty(e.shape, e.dtype, Device::cpu());
  } catch (const std::bad_alloc&) {
    fail("safetensors", where(source, e.name), ": out of memory allocating ", e.end - e.begin,
         " bytes");
  }
}

// A BOOL byte other than 0 and 1 is not a valid bool in C++; read it as true.
void normalise_bools(const Tensor& t) {
  if (t.dtype() != DType::boolean) return;
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
}

// pread until `n` bytes are in, or an error naming what was being read.
void read_at(int fd, void* dst, std::size_t n, std::uint64_t offset, const std::string& ctx,
             const char* what) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("safetensors", ctx, ": cannot read ", what, ": ", std::strerror(errno));
    STRATA_CHECK(r > 0, "safetensors", ctx, ": file ended while reading ", what,
                 " (truncated while being read?)");
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
}

// parse() (the header of n bytes), with running out of memory reported as
// an Error naming the source.
template <class Parse>
Header parse_guarded(const std::string& source, std::uint64_t n, const Parse& parse) {
  try {
    return parse();
  } catch (const std::bad_alloc&) {
    fail("safetensors", where(source), ": out of memory parsing a header of ", n, " bytes");
  }
}

// The file of a parsed header: each tensor made, its bytes written by
// fill(entry, tensor), its bools normalised.
template <class Fill>
SafetensorsFile assemble(Header& h, const std::string& source, const Fill& fill) {
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  for (const Entry& e : h.entries) {
    Tensor t = make_tensor(e, source);
    fill(e, t);
    normalise_bools(t);
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace

SafetensorsFile parse_safetensors(const void* bytes, std::size_t size, const std::string& source) {
  const auto* b = static_cast<const std::uint8_t*>(bytes);
  const std::uint64_t n = header_length(b, size, source);
  const std::uint64_t data_start = 8 + n;
  Header h = parse_guarded(source, n, [&] {
    return parse_header(reinterpret_cast<const char*>(b + 8), n, size - data_start, source);
  });
  return assemble(h, source, [&](const Entry& e, const Tensor& t) {
    if (e.end > e.begin) std::memcpy(t.data_ptr(), b + data_start + e.begin, e.end - e.begin);
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("safetensors", "cannot open '", path, "': ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    fail("safetensors", "cannot stat '", path, "': ", std::strerror(errno));
  STRATA_CHECK(!S_ISDIR(st.st_mode), "safetensors", where(path), ": is a directory");
  if (!S_ISREG(st.st_mode)) {  // a pipe: no size to check against, read it all
    const std::vector<std::uint8_t> bytes = strata::detail::read_file_bytes(path, "safetensors");
    return parse_safetensors(bytes.data(), bytes.size(), path);
  }
  // A regular file: the header first, then each tensor straight into its
  // own storage, so a large checkpoint is not held in memory twice.
  const auto size = static_cast<std::uint64_t>(st.st_size);
  std::uint8_t first[8] = {};
  if (size >= 8) read_at(fd, first, 8, 0, where(path), "the header length");
  const std::uint64_t n = header_length(first, size, path);
  Header h = parse_guarded(path, n, [&] {
    std::string text(n, '\0');
    read_at(fd, text.data(), n, 8, where(path), "the header");
    return parse_header(text.data(), n, size - 8 - n, path);
  });
  return assemble(h, path, [&](const Entry& e, const Tensor& t) {
    read_at(fd, t.data_ptr(), e.end - e.begin, 8 + n + e.begin, where(path, e.name), "its data");
  });
}

namespace {

// What a writer needs: the tensors in layout order and the padded header
// (its 8-byte length included). Every check happens here, before a byte is
// written. `op` and `dest` name the caller and the file in errors.
struct Plan {
  std::vector<const std::pair<const std::string, Tensor>*> order;
  std::string head;
};

Plan plan_file(const TensorDict& tensors, const std::map<std::string, std::string>& metadata,
               const char* op, const std::string& dest) {
  // Layout as the reference writes it: descending dtype order, then name;
  // the header lists __metadata__ (when there is any) and then the tensors
  // in that same order.
  Plan p;
  for (const auto& kv : tensors) {
    STRATA_CHECK(kv.first != "__metadata__", op, where(dest),
                 ": a tensor may not be called __metadata__ (the header's metadata key)");
    STRATA_CHECK(kv.second.defined(), op, where(dest, kv.first), ": undefined tensor");
    (void)file_dtype(kv.second.dtype());
    p.order.push_back(&kv);
  }
  std::stable_sort(p.order.begin(), p.order.end(), [](const auto* a, const auto* b) {
    return file_dtype(a->second.dtype()).order > file_dtype(b->second.dtype()).order;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (const auto* kv : p.order) {
    const Tensor& t = kv->second;
    const std::uint64_t nbytes = static_cast<std::uint64_t>(t.numel()) * itemsize(t.dtype());
    nlohmann::ordered_json entry;
    entry["dtype"] = file_dtype(t.dtype()).name;
    entry["shape"] = t.shape();
    entry["data_offsets"] = {at, at + nbytes};
    header[kv->first] = std::move(entry);
    at += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(op, where(dest), ": tensor names and metadata must be valid UTF-8 (", e.what(), ")");
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t n = text.size();
  p.head.assign(reinterpret_cast<const char*>(&n), 8);
  p.head += text;
  return p;
}

// The tensor's bytes, contiguous on the host (a copy unless it already is).
Tensor host_bytes(const Tensor& t) { return t.to(Device::cpu()).contiguous(); }

std::size_t nbytes_of(const Tensor& t) {
  return static_cast<std::size_t>(t.numel()) * itemsize(t.dtype());
}

}  // namespace

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const Plan p = plan_file(tensors, metadata, "save_safetensors", path);
  strata::detail::ReplacingFile file(path, "save_safetensors");
  file.write(p.head.data(), p.head.size());
  for (const auto* kv : p.order) {
    const Tensor host = host_bytes(kv->second);  // one tensor in host memory at a time
    if (host.numel() > 0) file.write(host.data_ptr(), nbytes_of(host));
  }
  file.commit();
}

std::string safetensors_bytes(const TensorDict& tensors,
                              const std::map<std::string, std::string>& metadata) {
  const Plan p = plan_file(tensors, metadata, "safetensors_bytes", "<memory>");
  std::string out = p.head;
  for (const auto* kv : p.order) {
    const Tensor host = host_bytes(kv->second);
    if (host.numel() > 0) out.append(static_cast<const char*>(host.data_ptr()), nbytes_of(host));
  }
  return out;
}

}  // namespace strata::nn
