// The tuning switchboard (strata/tuning.hpp): the table below is the one list
// of the library's environment switches, with how each is parsed and shown.
#include "strata/tuning.hpp"

#include <cstdlib>
#include <string_view>
#include <variant>

#include "strata/error.hpp"

namespace strata {
namespace {

// Where a switch lands in Tuning, and so how its text is parsed.
struct Names {
  std::string Tuning::*field;
  std::vector<std::string_view> allowed;  // empty: any name (checked where it is used)
};
using Field = std::variant<Toggle Tuning::*, bool Tuning::*, std::int64_t Tuning::*, Names,
                           std::vector<std::string> Tuning::*>;

struct Switch {
  const char* name;
  Field field;
  const char* help;
};

const Switch kSwitches[] = {
    {"STRATA_FUSED_RESIDUAL", &Tuning::fused_residual,
     "0/1: residual adds fused into the GEMM (default: on CUDA only)"},
    {"STRATA_CUDA_GRAPHS", &Tuning::cuda_graphs,
     "0/1: decode steps recorded once as a CUDA graph and replayed (default on)"},
    {"STRATA_HOST_CACHE", &Tuning::host_cache,
     "0: free large host blocks at once instead of keeping them for the next allocation"},
    {"STRATA_CPU_ISA", Names{&Tuning::cpu_isa, {"generic", "avx2", "avx512"}},
     "cap on the cpu kernels' instruction set (default: the best this CPU runs)"},
    {"STRATA_CPU_FIXED_TEAM", &Tuning::cpu_fixed_team,
     "0: size short parallel regions by their items instead of the full team"},
    {"STRATA_CPU_SLICE_ELEMS", &Tuning::cpu_slice_elems,
     "smallest slice of b, in elements, that one thread of a skinny product gets"},
    {"STRATA_CUDA_LAUNCH", Names{&Tuning::cuda_launch, {"pdl", "ex", "plain", "graph"}},
     "how kernels are launched (default pdl: programmatic dependent launch)"},
    {"STRATA_CUDA_BLOCK_CACHE", &Tuning::cuda_block_cache,
     "0: free device blocks to the stream-ordered pool, not Strata's own cache (default on)"},
    {"STRATA_CUDA_VARIANT", Names{&Tuning::cuda_variant, {}},
     "streaming attention kernel forced wherever it serves (strata info --kernels)"},
    {"STRATA_CUDA_DECODE_MIN_TILES", &Tuning::cuda_decode_min_tiles,
     "fewest key tiles per split of the decode kernels (default 1)"},
    {"STRATA_FLASH_VARIANT", &Tuning::flash_variants,
     "tensor-core attention configurations forced, comma-separated"},
    {"STRATA_FLASH_PAD", &Tuning::flash_pad,
     "0/1: the 16-bit pad pass off / on for every call (default: from 2^30 scores)"},
    {"STRATA_FLASH_SPLITS", &Tuning::flash_splits,
     "key splits of the tensor-core attention kernels forced (default: chosen)"},
    {"STRATA_FLASH_LPT", &Tuning::flash_lpt_heads,
     "heads per group of the causal heaviest-first order (0: head-major)"},
    {"STRATA_FLASH_DIAG_HALF", &Tuning::flash_diag_half,
     "0: diagonal half tiles of the wgmma d 64 kernel off"},
    {"STRATA_ROWS_VARIANT", Names{&Tuning::rows_variant, {}},
     "row kernel family forced (softmax, norms, reductions)"},
    {"STRATA_EW_VARIANT", Names{&Tuning::ew_variant, {"tiled16", "base"}},
     "elementwise kernel for transposed 16-bit inputs (default tiled16)"},
    {"STRATA_CUDA_GEMV", &Tuning::cuda_gemv, "0: small-M products go to cuBLAS"},
    {"STRATA_GEMV_MAX_M", &Tuning::gemv_max_m, "most rows of the 16-bit GEMV path"},
    {"STRATA_GEMV_ROWS_MAX_M", &Tuning::gemv_rows_max_m, "most rows of the multi-row GEMV"},
    {"STRATA_GEMV_ROWS_CT", &Tuning::gemv_rows_ct,
     "1, 2, 4 or 8 column groups per block of the multi-row GEMV (default: chosen)"},
    {"STRATA_GEMV_ROWS_SPLIT", &Tuning::gemv_rows_split,
     "0/1: more than 8 rows as two blocks of 8 (default: by width)"},
    {"STRATA_GEMV16_MMA", &Tuning::gemv16_mma, "0: the 16-bit GEMV's tensor-core kernel off"},
};

[[noreturn]] void bad(const char* name, std::string_view v, const char* expected) {
  fail("tuning", name, " is '", v, "'; expected ", expected);
}

void parse(const Switch& s, std::string_view v, Tuning& t) {
  struct Visitor {
    const Switch& s;
    std::string_view v;
    Tuning& t;
    void operator()(Toggle Tuning::*f) const {
      if (v != "0" && v != "1") bad(s.name, v, "0 or 1");
      t.*f = v == "1" ? Toggle::on : Toggle::off;
    }
    void operator()(bool Tuning::*f) const {
      if (v != "0" && v != "1") bad(s.name, v, "0 or 1");
      t.*f = v == "1";
    }
    void operator()(std::int64_t Tuning::*f) const {
      const std::string text(v);
      char* end = nullptr;
      const long long n = std::strtoll(text.c_str(), &end, 10);
      if (*end != '\0' || n < 0 || n > (1LL << 40)) bad(s.name, v, "a whole number from 0 to 2^40");
      t.*f = n;
    }
    void operator()(const Names& f) const {
      bool ok = f.allowed.empty();
      for (std::string_view a : f.allowed) ok = ok || a == v;
      if (!ok) {
        std::string list;
        for (std::string_view a : f.allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        bad(s.name, v, ("one of " + list).c_str());
      }
      t.*(f.field) = std::string(v);
    }
    void operator()(std::vector<std::string> Tuning::*f) const {
      std::size_t start = 0;
      while (start <= v.size()) {
        const std::size_t comma = std::min(v.find(',', start), v.size());
        if (comma > start) (t.*f).emplace_back(v.substr(start, comma - start));
        start = comma + 1;
      }
    }
  };
  std::visit(Visitor{s, v, t}, s.field);
}

std::string show(const Switch& s, const Tuning& t) {
  struct Visitor {
    const Tuning& t;
    std::string operator()(Toggle Tuning::*f) const {
      return t.*f == Toggle::automatic ? "auto" : t.*f == Toggle::on ? "1" : "0";
    }
    std::string operator()(bool Tuning::*f) const { return t.*f ? "1" : "0"; }
    std::string operator()(std::int64_t Tuning::*f) const { return std::to_string(t.*f); }
    std::string operator()(const Names& f) const {
      return (t.*(f.field)).empty() ? "default" : t.*(f.field);
    }
    std::string operator()(std::vector<std::string> Tuning::*f) const {
      std::string out;
      for (const std::string& n : t.*f) out += (out.empty() ? "" : ",") + n;
      return out.empty() ? "default" : out;
    }
  };
  return std::visit(Visitor{t}, s.field);
}

const char* from_environment(const char* name) { return std::getenv(name); }

}  // namespace

Tuning Tuning::from(const char* (*lookup)(const char* name)) {
  Tuning t;
  for (const Switch& s : kSwitches) {
    const char* v = lookup(s.name);
    if (v != nullptr && *v != '\0') parse(s, v, t);
  }
  return t;
}

const Tuning& tuning() {
  static const Tuning t = Tuning::from(from_environment);
  return t;
}

std::vector<TuningSwitch> tuning_switches(const Tuning& t) {
  std::vector<TuningSwitch> out;
  for (const Switch& s : kSwitches) out.push_back({s.name, show(s, t), s.help});
  return out;
}

}  // namespace strata
