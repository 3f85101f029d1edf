// Part of the cpu backend's block kernels (see kernel_impl.hpp, which
// includes this first): what both paths share, i.e. the tile constants, the
// workspace size, masks, the band, and the prefetch of the next key block.
// Same rules as kernel_impl.hpp: included inside an anonymous namespace after
// the target pragma, no include guard, no standard headers.

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct ImplCommon {
  using V = vec<T, W>;
  static constexpr int NC = W * NV;  // queries per register tile
  static_assert(MB % NC == 0 && NB % MR == 0 && NBD % W == 0);
  static constexpr T kInf = __builtin_inf();
  static constexpr T kLog2e = static_cast<T>(1.44269504088896340735992468100189214L);
  static constexpr i64 kBlockBytes = 96 * 1024;  // K + V tile of one key block
  static constexpr i64 kPackPad = 16;            // breaks power-of-two strides
  static constexpr i64 kStreamBytes = 8 << 20;   // K + V larger than this stream from DRAM

  static i64 round_up(i64 x, i64 m) { return (x + m - 1) / m * m; }

  // Keys per block of the blocked path: the K and V tiles of this block and
  // of the prefetched next one should share L2 with the packed tiles, so wide
  // heads take fewer keys (192 at d = dv = 64, 96 at d = dv = 128, f32).
  static i64 block_keys(i64 d, i64 dv) {
    const i64 nbe = kBlockBytes / static_cast<i64>(sizeof(T)) / (d + dv) / MR * MR;
    return nbe < MR ? MR : (nbe > NB ? NB : nbe);
  }

  // ---- workspace ----------------------------------------------------------
  static std::size_t ws_elems(i64 d, i64 dv) {
    const i64 blocked = (d + NB + dv + 5) * MB + d * (NB + kPackPad);
    const i64 dp = round_up(d, W), dvp = round_up(dv, W);
    const i64 decode = RD * dp + RD * NBD + RD * dvp + NBD * dp + NBD * dvp + 4 * RD;
    return static_cast<std::size_t>((blocked > decode ? blocked : decode) + 4 * W);
  }

  // ---- masks (shared) --------------------------------------------------------
  // at(i, j) is the score of local query row i and local key j; keys are
  // absolute jb + j, rows absolute i0 + i.
  template <class At>
  static void apply_mask(const BlockJob& J, i64 jb, i64 nb, At at) {
    if (J.mask_bool) {
      const auto* mk = static_cast<const unsigned char*>(J.mask);
      for (i64 i = 0; i < J.rows; ++i) {
        const unsigned char* mr = mk + (J.i0 + i) * J.mk_ms + jb * J.mk_ns;
        for (i64 j = 0; j < nb; ++j)
          if (!mr[j * J.mk_ns]) at(i, j) = -kInf;
      }
    } else {
      const auto* mk = static_cast<const T*>(J.mask);
      for (i64 i = 0; i < J.rows; ++i) {
        const T* mr = mk + (J.i0 + i) * J.mk_ms + jb * J.mk_ns;
        for (i64 j = 0; j < nb; ++j) at(i, j) += mr[j * J.mk_ns] * kLog2e;
      }
    }
  }

  // Band after mask, so an excluded key is -inf whatever the float mask adds.
  template <class At>
  static void apply_band(const BlockJob& J, i64 jb, i64 nb, At at) {
    for (i64 j = 0; j < nb; ++j) {
      // Query rows that keep key jb + j: i0 + i in [jb + j - hi, jb + j - lo].
      const i64 lo_i = jb + j - J.band_hi - J.i0;
      const i64 hi_i = jb + j - J.band_lo - J.i0;
      const i64 a = lo_i < J.rows ? lo_i : J.rows;
      for (i64 i = 0; i < a; ++i) at(i, j) = -kInf;
      for (i64 i = hi_i + 1 > 0 ? hi_i + 1 : 0; i < J.rows; ++i) at(i, j) = -kInf;
    }
  }

  // Asks for the tile [n keys x len] (row stride rs, unit inner stride or unit
  // row stride) to be brought into L2 in one burst: the next key block's K
  // and V, issued one block ahead so the micro-kernels' broadcasts find them
  // there rather than in L3. Prefetches never fault, so ranges past the end
  // are safe.
  static void prefetch_tile(const T* base, i64 ns, i64 ds, i64 n, i64 len) {
    constexpr i64 line = 64 / sizeof(T);
    if (ds == 1) {
      for (i64 j = 0; j < n; ++j)
        for (i64 c = 0; c < len; c += line) __builtin_prefetch(base + j * ns + c, 0, 2);
    } else if (ns == 1) {
      for (i64 c = 0; c < len; ++c)
        for (i64 j = 0; j < n; j += line) __builtin_prefetch(base + c * ds + j, 0, 2);
    }
  }

  // When K and V stream from DRAM (too large for the last-level cache),
  // brings the next key block's K and V into L2 a few lines at a time while
  // the current block is computed (step() after each micro-kernel tile), so
  // the memory system streams at the rate the kernel consumes instead of in
  // one burst of up to 1536 prefetches that fills the miss queues and stalls
  // the core. A tile of n keys is walked row by row when its last stride is 1
  // and column by column when its key stride is 1; other layouts are not
  // prefetched. Prefetches never fault, so ranges past the end are safe.
  struct Prefetcher {
    static constexpr i64 kLine = 64 / static_cast<i64>(sizeof(T));
    struct Stream {
      const T* base = nullptr;
      i64 rs = 0, rows = 0, len = 0, r = 0, c = 0;
      void set(const T* b, i64 ns, i64 ds, i64 n, i64 width) {
        r = c = 0;
        base = b;
        if (ds == 1)
          rs = ns, rows = n, len = width;
        else if (ns == 1)
          rs = ds, rows = width, len = n;
        else
          rows = 0;
      }
      i64 lines() const { return rows * ((len + kLine - 1) / kLine); }
      bool step() {
        if (r >= rows) return false;
        __builtin_prefetch(base + r * rs + c, 0, 2);
        c += kLine;
        if (c >= len) c = 0, ++r;
        return true;
      }
    };
    Stream k, v;
    i64 per_step = 0;
    // Next block: K rows from kb, V rows from vb, n keys; spread over `steps` calls.
    void start(const T* kb, i64 kns, i64 kds, i64 d, const T* vb, i64 vns, i64 vds, i64 dv, i64 n,
               i64 steps) {
      k.set(kb, kns, kds, n, d);
      v.set(vb, vns, vds, n, dv);
      per_step = (k.lines() + v.lines() + steps - 1) / steps;
    }
    void stop() { k.rows = v.rows = 0; }
    void step() {
      for (i64 i = 0; i < per_step; ++i)
        if (!k.step() && !v.step()) return;
    }
  };

  static bool block_fully_kept(const BlockJob& J, i64 jb, i64 nb) {
    if (!J.has_band) return true;
    const i64 ilast = J.i0 + J.rows - 1;
    return jb >= ilast + J.band_lo && jb + nb - 1 <= J.i0 + J.band_hi;
  }
};
