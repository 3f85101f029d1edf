// The cpu backend's softmax_attention driver: splits the problem into tasks
// (batch x head x query block, and key chunks when those cannot keep every
// thread busy), runs them on OpenMP threads with the block kernels of the
// best instruction set, and writes out / lse, merging key-chunk partials by
// log-sum-exp. Extra memory: one workspace per thread, O((MB + NB) * (d +
// dv)), plus the partials of split tasks, O(threads * MB * dv), plus a
// row-major copy of K (at most 256 MiB) when K's head dim is not unit-stride
// and several query blocks read each head.
#include "cpu/attention/attention_cpu.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <numeric>
#include <vector>

#include "cpu/attention/cpu_kernels.hpp"
#include "cpu/attention/pack_rows.hpp"
#include "cpu/threads.hpp"
#include "cpu/workspace.hpp"
#include "strata/error.hpp"

namespace strata::cpu {
namespace {

struct Task {
  i64 bh;  // flat batch * Hq + head
  i64 qb;  // query block
  i64 j0, j1;
  i64 slot;  // partial slot (split tasks) or -1
};

struct Group {  // the key chunks of one (bh, qb), when split
  i64 bh, qb;
  i64 first_slot, count;
};

// 64-byte aligned scratch; the allocation may throw, so it happens before the
// parallel region.
struct AlignedBuffer {
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<std::byte[], Free> p;
  explicit AlignedBuffer(std::size_t n)
      : p(static_cast<std::byte*>(::operator new[](n, std::align_val_t(64)))) {}
};

// One workspace per thread, allocated before the parallel region; a strata::Error
// naming the bytes when they cannot be had.
std::vector<AlignedBuffer> thread_workspaces(std::size_t bytes, int threads) {
  const char* what = "per-thread workspaces";
  std::uint64_t total = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(bytes), static_cast<std::uint64_t>(threads),
                             &total))
    fail("softmax_attention", "the cpu backend's ", what, " would need more than 2^64 bytes");
  check_workspace(total, "softmax_attention", what);
  try {
    std::vector<AlignedBuffer> ws;
    ws.reserve(static_cast<std::size_t>(threads));
    for (int t = 0; t < threads; ++t) ws.emplace_back(bytes);
    return ws;
  } catch (const std::bad_alloc&) {
    refuse_workspace("softmax_attention", what, total, "the allocation failed");
  }
}

constexpr double kLn2 = 0.693147180559945309417232121458176568;
constexpr double kLog2e = 1.44269504088896340735992468100189214;
constexpr i64 kMergeRows = 16;  // rows per work item of the split-key merge
// Largest row-major copy of K the driver makes for a K whose head dim is not
// unit-stride (beyond it the kernels copy per key block, as for one reader).
constexpr i64 kMaxKPackBytes = i64(256) << 20;

template <class T>
struct Driver {
  const AttentionArgs& a;
  const IsaKernels& isa;
  i64 mb = 0;     // rows per query block
  i64 group = 1;  // Hq / Hkv
  // K copied row-major ([batch][Hkv][N][d]) when its head dim is not
  // unit-stride and several query blocks read each head; else empty.
  std::unique_ptr<T[]> kpack{};

  i64 band_first_key(i64 i0) const {  // first key any row >= i0 may keep
    if (!a.has_band()) return 0;
    return std::clamp<i64>(i0 + a.band_lo, 0, a.N);
  }
  i64 band_end_key(i64 ilast) const {  // one past the last key rows <= ilast keep
    if (!a.has_band()) return a.N;
    if (a.band_lo > a.band_hi) return 0;
    return std::clamp<i64>(ilast + a.band_hi + 1, 0, a.N);
  }

  BlockJob job(const Task& t) const {
    const i64 b = t.bh / a.Hq, h = t.bh % a.Hq, hk = h / group;
    const i64 i0 = t.qb * mb;
    BlockJob j{};
    j.q = attn::head_ptr<const T>(a.q, b, h);
    j.q_ms = attn::row_stride(a.q);
    j.q_ds = attn::col_stride(a.q);
    if (!kpack) {
      j.k = attn::head_ptr<const T>(a.k, b, hk);
      j.k_ns = attn::row_stride(a.k);
      j.k_ds = attn::col_stride(a.k);
    } else {
      j.k = kpack.get() + (b * a.Hkv + hk) * a.N * a.d;
      j.k_ns = a.d;
      j.k_ds = 1;
    }
    j.v = attn::head_ptr<const T>(a.v, b, hk);
    j.v_ns = attn::row_stride(a.v);
    j.v_ds = attn::col_stride(a.v);
    if (a.mask.data) {
      j.mask_bool = a.mask.dtype == DType::boolean;
      j.mask = j.mask_bool
                   ? static_cast<const void*>(attn::head_ptr<const unsigned char>(a.mask, b, h))
                   : static_cast<const void*>(attn::head_ptr<const T>(a.mask, b, h));
      j.mk_ms = attn::row_stride(a.mask);
      j.mk_ns = attn::col_stride(a.mask);
    }
    j.d = a.d;
    j.dv = a.dv;
    j.i0 = i0;
    j.rows = std::min(mb, a.M - i0);
    j.j0 = t.j0;
    j.j1 = t.j1;
    j.has_band = a.has_band();
    j.band_lo = a.band_lo;
    j.band_hi = a.band_hi;
    j.qscale = a.scale * kLog2e;
    j.kv_bytes = a.N * (a.d + a.dv) * static_cast<i64>(sizeof(T));
    return j;
  }

  // A K whose head dim is not unit-stride (column-major, transposed, gapped)
  // makes the blocked kernel copy each key block before its Q K^T, once per
  // query block. When each kv head is read by several query blocks, one
  // row-major copy per call is cheaper (docs/log/cpu-tuning.md, sections
  // 18-19). Without memory for it, the per-block copies stay.
  void pack_k(i64 readers) {
    const i64 heads = a.batch_count() * a.Hkv;
    const i64 bytes = heads * a.N * a.d * static_cast<i64>(sizeof(T));
    if (attn::col_stride(a.k) == 1 || readers < 2 || a.N == 0 || bytes > kMaxKPackBytes) return;
    try {  // uninitialised: every element is written below
      kpack = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(heads * a.N * a.d));
    } catch (const std::bad_alloc&) {
      return;
    }
    constexpr i64 kKeys = 256;  // keys per work item
    const i64 tiles = (a.N + kKeys - 1) / kKeys;
#pragma omp parallel for schedule(static)
    for (i64 it = 0; it < heads * tiles; ++it) {
      const i64 hb = it / tiles, j0 = it % tiles * kKeys;
      const i64 b = hb / a.Hkv, hk = hb % a.Hkv;
      const i64 kns = attn::row_stride(a.k);
      pack_rows(attn::head_ptr<const T>(a.k, b, hk) + j0 * kns, std::min(kKeys, a.N - j0), a.d, kns,
                attn::col_stride(a.k), kpack.get() + (hb * a.N + j0) * a.d);
    }
  }

  // out / lse of rows [i0, i0 + rows) of head bh from a block's state.
  void finalize(i64 bh, i64 i0, i64 rows, const BlockState<T>& s) const {
    const i64 b = bh / a.Hq, h = bh % a.Hq;
    T* out = attn::head_ptr<T>(a.out, b, h);
    T* lse = a.lse.data ? attn::head_ptr<T>(a.lse, b, h) : nullptr;
    const i64 oms = attn::row_stride(a.out), ods = attn::col_stride(a.out);
    const i64 lms = attn::row_stride(a.lse);
    for (i64 r = 0; r < rows; ++r) {
      T* orow = out + (i0 + r) * oms;
      const T mr = s.m[r];
      if (mr == -std::numeric_limits<T>::infinity()) {  // no key kept
        for (i64 c = 0; c < a.dv; ++c) orow[c * ods] = T(0);
        if (lse) lse[(i0 + r) * lms] = -std::numeric_limits<T>::infinity();
        continue;
      }
      const T inv = T(1) / s.l[r];
      for (i64 c = 0; c < a.dv; ++c) orow[c * ods] = s.at(r, c) * inv;
      if (lse)
        lse[(i0 + r) * lms] = static_cast<T>(
            (static_cast<double>(mr) + std::log2(static_cast<double>(s.l[r]))) * kLn2);
    }
  }

  void run() {
    const i64 M = a.M, N = a.N;
    const i64 BH = a.batch_count() * a.Hq;
    if (M <= 0 || BH <= 0) return;
    group = a.Hq / a.Hkv;
    const bool decode = M <= isa.decode_rows;
    mb = decode ? M : isa.mb;
    const i64 QB = (M + mb - 1) / mb;
    const int max_threads = std::max(1, omp_get_max_threads());
    if (!decode) pack_k(QB * group);

    // Key chunks per (bh, qb): enough work items for dynamic balancing when
    // batch x heads x query blocks cannot give every thread two tasks
    // (decode, short prompts). One thread never splits: that only adds merge
    // work. Chunks are cut on whole key blocks of the size the kernel runs,
    // as evenly as those allow, so no thread is left with an extra block.
    const i64 base = BH * QB;
    i64 split = 1;
    if (max_threads > 1 && base < 2 * max_threads && N > 0)
      split = (4 * max_threads + base - 1) / base;
    const i64 blk = decode ? 128 : isa.block_keys(a.dtype(), a.d, a.dv);
    const i64 min_blocks = std::max<i64>(1, ((decode ? 1024 : 4 * isa.nb) + blk - 1) / blk);

    std::vector<Task> tasks;
    std::vector<Group> groups;
    i64 nslots = 0;
    tasks.reserve(static_cast<std::size_t>(base * split));
    for (i64 bh = 0; bh < BH; ++bh) {
      for (i64 qb = 0; qb < QB; ++qb) {
        const i64 i0 = qb * mb, ilast = std::min(M, i0 + mb) - 1;
        const i64 k0 = band_first_key(i0);
        const i64 k1 = std::max(k0, band_end_key(ilast));
        const i64 nblk = (k1 - k0 + blk - 1) / blk;
        const i64 parts = std::clamp<i64>(nblk / min_blocks, 1, split);
        if (parts <= 1) {
          tasks.push_back(Task{bh, qb, k0, k1, -1});
          continue;
        }
        groups.push_back(Group{bh, qb, nslots, parts});
        for (i64 c = 0; c < parts; ++c) {
          const i64 j0 = k0 + c * nblk / parts * blk;
          const i64 j1 = std::min(k1, k0 + (c + 1) * nblk / parts * blk);
          tasks.push_back(Task{bh, qb, j0, j1, nslots++});
        }
      }
    }
    // Longest key ranges first (causal masks make them uneven).
    std::vector<i64> order(tasks.size());
    std::iota(order.begin(), order.end(), i64{0});
    if (a.has_band())
      std::stable_sort(order.begin(), order.end(), [&](i64 x, i64 y) {
        return tasks[x].j1 - tasks[x].j0 > tasks[y].j1 - tasks[y].j0;
      });

    const i64 ntasks = static_cast<i64>(tasks.size());
    const int nthreads = region_team(ntasks);  // threads past ntasks get no task
    const std::size_t ws_bytes = isa.ws_bytes(a.dtype(), a.d, a.dv);
    const std::vector<AlignedBuffer> ws = thread_workspaces(ws_bytes, nthreads);
    const i64 slot_elems = mb * (a.dv + 2);
    std::vector<T> partial =
        workspace<T>({nslots, slot_elems}, "softmax_attention", "split-key partial results");
    const i64 mrb = (mb + kMergeRows - 1) / kMergeRows;  // merge items per group
    const i64 nmerge = static_cast<i64>(groups.size()) * mrb;
    const std::size_t mstride = static_cast<std::size_t>(split + a.dv);
    std::vector<double> mscratch =
        workspace<double>({groups.empty() ? 0 : nthreads, static_cast<i64>(mstride)},
                          "softmax_attention", "merge scratch");

    auto block = [&](const BlockJob& j, void* w) {
      if constexpr (sizeof(T) == 4)
        return isa.block_f32(j, w);
      else
        return isa.block_f64(j, w);
    };

#pragma omp parallel num_threads(nthreads)
    {
      void* w = ws[static_cast<std::size_t>(omp_get_thread_num())].p.get();
#pragma omp for schedule(dynamic, 1)
      for (i64 n = 0; n < ntasks; ++n) {
        const Task& t = tasks[static_cast<std::size_t>(order[static_cast<std::size_t>(n)])];
        const BlockJob j = job(t);
        const BlockState<T> s = block(j, w);
        if (t.slot < 0) {
          finalize(t.bh, j.i0, j.rows, s);
        } else {  // keep (m, l, acc) for the merge below
          T* p = partial.data() + t.slot * slot_elems;
          for (i64 r = 0; r < j.rows; ++r) {
            p[r] = s.m[r];
            p[mb + r] = s.l[r];
            for (i64 c = 0; c < a.dv; ++c) p[2 * mb + r * a.dv + c] = s.at(r, c);
          }
        }
      }
      // The implicit barrier above makes every partial visible here. The
      // merge is cut into row blocks too, so both threads share it even when
      // there is a single group (M = 64, long N).
      double* scratch = mscratch.data() + static_cast<std::size_t>(omp_get_thread_num()) * mstride;
#pragma omp for schedule(dynamic, 1)
      for (i64 it = 0; it < nmerge; ++it)
        merge(groups[static_cast<std::size_t>(it / mrb)], (it % mrb) * kMergeRows, partial,
              slot_elems, scratch);
    }
  }

  // Log-sum-exp merge of rows [r0, r0 + kMergeRows) of one (bh, qb)'s key
  // chunks, in double, straight into out / lse. scratch: count + dv doubles
  // (no allocation: this runs inside the parallel region).
  void merge(const Group& g, i64 r0, const std::vector<T>& partial, i64 slot_elems,
             double* scratch) const {
    constexpr double ninf = -std::numeric_limits<double>::infinity();
    const i64 i0 = g.qb * mb, rows = std::min(mb, a.M - i0);
    const i64 b = g.bh / a.Hq, h = g.bh % a.Hq;
    T* out = attn::head_ptr<T>(a.out, b, h);
    T* lse = a.lse.data ? attn::head_ptr<T>(a.lse, b, h) : nullptr;
    const i64 oms = attn::row_stride(a.out), ods = attn::col_stride(a.out);
    const i64 lms = attn::row_stride(a.lse);
    auto slot = [&](i64 s) { return partial.data() + (g.first_slot + s) * slot_elems; };
    double* w = scratch;              // weight of each chunk for the current row
    double* acc = scratch + g.count;  // the row's output, dv values
    for (i64 r = r0; r < std::min(rows, r0 + kMergeRows); ++r) {
      T* orow = out + (i0 + r) * oms;
      double mx = ninf;
      bool nan = false;
      for (i64 s = 0; s < g.count; ++s) {
        const double ms = slot(s)[r];
        nan |= std::isnan(ms);
        mx = std::max(mx, ms);
      }
      if (nan) mx = std::numeric_limits<double>::quiet_NaN();
      if (mx == ninf) {
        for (i64 c = 0; c < a.dv; ++c) orow[c * ods] = T(0);
        if (lse) lse[(i0 + r) * lms] = -std::numeric_limits<T>::infinity();
        continue;
      }
      // Chunks that kept nothing weigh 0 (their m is -inf, and -inf - -inf
      // would be NaN); their accumulators are 0.
      double lsum = 0;
      for (i64 s = 0; s < g.count; ++s) {
        const double ms = slot(s)[r];
        w[s] = ms == ninf ? 0.0 : std::exp2(ms - mx);
        lsum += w[s] * slot(s)[mb + r];
      }
      for (i64 c = 0; c < a.dv; ++c) acc[c] = 0;
      for (i64 s = 0; s < g.count; ++s) {
        const T* src = slot(s) + 2 * mb + r * a.dv;
        const double ws = w[s];
        for (i64 c = 0; c < a.dv; ++c) acc[c] += ws * static_cast<double>(src[c]);
      }
      for (i64 c = 0; c < a.dv; ++c) orow[c * ods] = static_cast<T>(acc[c] / lsum);
      if (lse) lse[(i0 + r) * lms] = static_cast<T>((mx + std::log2(lsum)) * kLn2);
    }
  }
};

}  // namespace

template <class T>
void attention_cpu(const AttentionArgs& a) {
  Driver<T> drv{a, select_kernels()};
  try {
    drv.run();
  } catch (const std::bad_alloc&) {  // the task lists (workspaces say their bytes)
    fail("softmax_attention", "the cpu backend ran out of memory for its task lists (",
         a.batch_count() * a.Hq, " heads x ", a.M, " query rows)");
  }
}

template void attention_cpu<float>(const AttentionArgs&);
template void attention_cpu<double>(const AttentionArgs&);

const char* attention_cpu_supports(const AttentionArgs& a) {
  if (a.dtype() != DType::f32 && a.dtype() != DType::f64) return "only f32 and f64";
  if (a.mask.data && a.mask.dtype != DType::boolean && a.mask.dtype != a.dtype())
    return "mask must be bool or of q's dtype";
  return nullptr;
}

const char* isa_name() { return select_kernels().name; }

}  // namespace strata::cpu
