// Block kernels of the cpu backend, templated on element type, SIMD width
// and register blocking. Included by kernel_{generic,avx2,avx512}.cpp AFTER
// their standard includes and `#pragma GCC target`, inside an anonymous
// namespace, so each instruction set gets private copies. No include guard
// on purpose; no standard headers in here (see simd.hpp).
//
// Blocked path (rows > decode_rows). The score tile is kept transposed,
// S^T [keys x queries], so that
//  - Q^T of the query block is packed once per task (scaled by
//    scale * log2 e, zero-padded to a multiple of the register tile width);
//  - the Q K^T micro-kernel broadcasts K elements straight from the input
//    against unit-stride vector loads of Q^T (any strides work; a K whose
//    last stride is not 1 is copied per block first, only to spare L1 the
//    same-set misses of a column-major walk);
//  - the online-softmax statistics of a query are a column of S^T, so max,
//    exp and sum are plain vertical vector ops with no horizontal reduction;
//  - the P V micro-kernel broadcasts V elements straight from the input
//    against unit-stride loads of P^T, accumulating O^T [dv x queries] in
//    the workspace; the rescale by alpha rides along with the load of O^T.
// Decode path (rows <= RD, e.g. M = 1): a dot-product formulation over d,
// K and V rows read in place when their last stride is 1, else packed per
// key block.

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct Impl {
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

  // ---- blocked path: micro-kernels ------------------------------------------
  // S^T[g + r][p + c] = sum_k K[g + r][k] * QT[k][p + c], r < R, c < NC.
  // What the Q K^T micro-kernel does besides storing S, for the NC columns
  // of one panel: with cmax set, it also folds the column maxima into cmax
  // (saves the softmax a pass over S^T on unmasked blocks).
  struct Epilogue {
    T* cmax = nullptr;
    Epilogue at(i64 p) const { return {cmax ? cmax + p : nullptr}; }
  };

  // UK: K rows with unit head-dim stride (kns apart). Otherwise K^T rows as
  // the column-major pack in run_blocked leaves them: unit key stride, head
  // dims kds apart, so the R keys of one head dim are adjacent and one base
  // pointer addresses them all (the only way run_blocked calls it).
  template <int R, bool UK>
  __attribute__((always_inline)) static void qk_tile(const T* kp, i64 kns, i64 kds, const T* qt,
                                                     i64 d, T* st, Epilogue ep) {
    V acc[R][NV];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = vzero<T, W>();
    const T* kr[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) kr[r] = kp + r * kns;
    [[maybe_unused]] const i64 next = R * kns;
    for (i64 kk = 0; kk < d; ++kk) {
      const T* qrow = qt + kk * NC;
      V b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = vload<T, W>(qrow + v * W);
      if constexpr (UK) {
        // The next tile's rows, a cache line each time ours cross one.
        if ((kk & (64 / sizeof(T) - 1)) == 0)
#pragma GCC unroll 16
          for (int r = 0; r < R; ++r) __builtin_prefetch(kr[r] + next + kk);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const V a = vset1<T, W>(kr[r][kk]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] = vfma<T, W>(a, b[v], acc[r][v]);
        }
      } else {
        const T* kt = kp + kk * kds;
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) {
          const V a = vset1<T, W>(kt[r]);
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) acc[r][v] = vfma<T, W>(a, b[v], acc[r][v]);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) vstore<T, W>(st + r * NC + v * W, acc[r][v]);
    if (ep.cmax) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        V mx = vload<T, W>(ep.cmax + v * W);
#pragma GCC unroll 16
        for (int r = 0; r < R; ++r) mx = vmax<T, W>(mx, acc[r][v]);
        vstore<T, W>(ep.cmax + v * W, mx);
      }
    }
  }

  template <int R, bool UK>
  static void qk_rem(int rem, const T* kp, i64 kns, i64 kds, const T* qt, i64 d, T* st,
                     Epilogue ep) {
    if constexpr (R >= 1) {
      if (rem == R)
        qk_tile<R, UK>(kp, kns, kds, qt, d, st, ep);
      else
        qk_rem<R - 1, UK>(rem, kp, kns, kds, qt, d, st, ep);
    }
  }

  template <bool UK, bool PF>
  static void qk_panel(const T* kb, i64 kns, i64 kds, const T* qt, i64 d, T* st, i64 nb,
                       Epilogue ep, Prefetcher& pf) {
    if (ep.cmax)
      for (int c = 0; c < NC; ++c) ep.cmax[c] = -kInf;
    i64 g = 0;
    for (; g + MR <= nb; g += MR) {
      qk_tile<MR, UK>(kb + g * kns, kns, kds, qt, d, st + g * NC, ep);
      if constexpr (PF) pf.step();
    }
    if (g < nb) {
      qk_rem<MR - 1, UK>(static_cast<int>(nb - g), kb + g * kns, kns, kds, qt, d, st + g * NC, ep);
      if constexpr (PF) pf.step();
    }
  }

  // OT[c0 + r][p + c] = OT[..] * alpha[p + c] + sum_j V[j][c0 + r] * PT[j][p + c].
  template <int R, bool UV>
  __attribute__((always_inline)) static void pv_tile(const T* vp, i64 vns, i64 vds, const T* pt,
                                                     i64 nb, T* ot, const T* al) {
    V acc[R][NV];
    V a[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[v] = vload<T, W>(al + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = vload<T, W>(ot + r * NC + v * W) * a[v];
    for (i64 j = 0; j < nb; ++j) {
      const T* prow = pt + j * NC;
      V b[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) b[v] = vload<T, W>(prow + v * W);
      const T* vrow = vp + j * vns;
      __builtin_prefetch(vrow + 8 * vns);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const V x = vset1<T, W>(vrow[UV ? r : r * vds]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[r][v] = vfma<T, W>(x, b[v], acc[r][v]);
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) vstore<T, W>(ot + r * NC + v * W, acc[r][v]);
  }

  template <int R, bool UV>
  static void pv_rem(int rem, const T* vp, i64 vns, i64 vds, const T* pt, i64 nb, T* ot,
                     const T* al) {
    if constexpr (R >= 1) {
      if (rem == R)
        pv_tile<R, UV>(vp, vns, vds, pt, nb, ot, al);
      else
        pv_rem<R - 1, UV>(rem, vp, vns, vds, pt, nb, ot, al);
    }
  }

  template <bool UV, bool PF>
  static void pv_panel(const T* vb, i64 vns, i64 vds, const T* pt, i64 nb, i64 dv, T* ot,
                       const T* al, Prefetcher& pf) {
    i64 c = 0;
    for (; c + MR <= dv; c += MR) {
      pv_tile<MR, UV>(vb + c * vds, vns, vds, pt, nb, ot + c * NC, al);
      if constexpr (PF) pf.step();
    }
    if (c < dv) {
      pv_rem<MR - 1, UV>(static_cast<int>(dv - c), vb + c * vds, vns, vds, pt, nb, ot + c * NC, al);
      if constexpr (PF) pf.step();
    }
  }

  // Online-softmax update of columns [0, cols) of the S^T tile: new running
  // max, alpha = 2^(m_old - m_new), P = 2^(S - m_new) in place, l updated.
  // A column whose max is still -inf exponentiates against 0 instead (all its
  // P are then 0), but m itself keeps -inf.
  // cmax: the block's column maxima when qk_tile already folded them, else null.
  static void softmax_cols(i64 nb, i64 cols, T* st, T* m, T* l, T* al, const T* cmax) {
    const V ninf = vset1<T, W>(-kInf);
    for (i64 p = 0; p < cols; p += NC) {
      T* sp = st + p * NB;  // panel p / NC: [NB][NC]
      V mx[NV];
      if (cmax) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) mx[v] = vload<T, W>(cmax + p + v * W);
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) mx[v] = ninf;
        for (i64 j = 0; j < nb; ++j)
#pragma GCC unroll 4
          for (int v = 0; v < NV; ++v) mx[v] = vmax<T, W>(mx[v], vload<T, W>(sp + j * NC + v * W));
      }
      V mu[NV], a[NV], ls[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const V mold = vload<T, W>(m + p + v * W);
        const V mnew = vmax<T, W>(mold, mx[v]);
        mu[v] = mnew == ninf ? vzero<T, W>() : mnew;
        a[v] = vexp2<T, W>(mold - mu[v]);
        vstore<T, W>(m + p + v * W, mnew);
        vstore<T, W>(al + p + v * W, a[v]);
        ls[v] = vzero<T, W>();
      }
      for (i64 j = 0; j < nb; ++j)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          T* e_at = sp + j * NC + v * W;
          const V e = vexp2<T, W>(vload<T, W>(e_at) - mu[v]);
          vstore<T, W>(e_at, e);
          ls[v] += e;
        }
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        vstore<T, W>(l + p + v * W, vload<T, W>(l + p + v * W) * a[v] + ls[v]);
    }
  }

  static BlockState<T> run_blocked(const BlockJob& J, T* ws) {
    const i64 rows = J.rows, d = J.d, dv = J.dv;
    const i64 cols = round_up(rows, NC);
    // Panel-major tiles (one contiguous [rows][NC] block per NC queries), so
    // the micro-kernels stream consecutive cache lines; a plain [rows][MB]
    // layout has a power-of-two row stride that thrashes a few L1 sets.
    T* qt = ws;            // [cols / NC][d][NC]
    T* st = qt + d * MB;   // [cols / NC][NB][NC]
    T* ot = st + NB * MB;  // [cols / NC][dv][NC]
    T* m = ot + dv * MB;
    T* l = m + MB;
    T* al = l + MB;
    T* cm = al + MB;   // column maxima of the current block
    T* kpk = cm + MB;  // K tile repacked when its last stride is not 1

    const T* q = static_cast<const T*>(J.q);
    const T qs = static_cast<T>(J.qscale);
    for (i64 i = 0; i < rows; ++i) {
      const T* qr = q + (J.i0 + i) * J.q_ms;
      T* qp = qt + (i / NC) * d * NC + i % NC;
      for (i64 kk = 0; kk < d; ++kk) qp[kk * NC] = qr[kk * J.q_ds] * qs;
    }
    for (i64 i = rows; i < cols; ++i)
      for (i64 kk = 0; kk < d; ++kk) qt[(i / NC) * d * NC + kk * NC + i % NC] = 0;
    for (i64 i = 0; i < cols; ++i) {
      m[i] = -kInf;
      l[i] = 0;
    }
    for (i64 i = 0; i < dv * cols; ++i) ot[i] = 0;

    const T* k = static_cast<const T*>(J.k);
    const T* v = static_cast<const T*>(J.v);
    const bool uk = J.k_ds == 1, uv = J.v_ds == 1;
    const i64 nbe = block_keys(d, dv);
    // Micro-kernel tiles per full block (Q K^T and P V): the prefetch of the
    // next block is spread over them only when K and V are too large for the
    // last-level cache: from L3 a burst at the block's start is served fast
    // enough, and the steps cost more than they save (cpu-tuning.md section
    // 11). The two are separate template instances of the panel loops.
    const bool spread = J.kv_bytes > kStreamBytes;
    const i64 steps = cols / NC * ((nbe + MR - 1) / MR + (dv + MR - 1) / MR);
    Prefetcher pf;
    for (i64 jb = J.j0; jb < J.j1; jb += nbe) {
      const i64 nb = J.j1 - jb < nbe ? J.j1 - jb : nbe;
      const T* kb = k + jb * J.k_ns;
      if (jb + nbe < J.j1) {
        const i64 nb2 = J.j1 - jb - nbe < nbe ? J.j1 - jb - nbe : nbe;
        if (spread) {
          pf.start(kb + nbe * J.k_ns, J.k_ns, J.k_ds, d, v + (jb + nbe) * J.v_ns, J.v_ns, J.v_ds,
                   dv, nb2, steps);
        } else {
          prefetch_tile(kb + nbe * J.k_ns, J.k_ns, J.k_ds, nb2, d);
          prefetch_tile(v + (jb + nbe) * J.v_ns, J.v_ns, J.v_ds, nb2, dv);
        }
      } else {
        pf.stop();
      }
      // The micro-kernel reads K element by element, so any strides work, but
      // walking a column-major K (stride N along d) puts every step's line in
      // the same L1 set once N * sizeof(T) is a multiple of 4 KiB. Copy such a
      // tile first: as K^T rows of nb keys (cheap contiguous copies) when the
      // key stride is 1, else gathered row-major.
      i64 kns = J.k_ns, kds = J.k_ds;
      if (!uk) {
        if (J.k_ns == 1) {
          const i64 ld = nb + kPackPad;
          for (i64 kk = 0; kk < d; ++kk) {
            const T* src = kb + kk * J.k_ds;
            T* dst = kpk + kk * ld;
            for (i64 j = 0; j < nb; ++j) dst[j] = src[j];
          }
          kb = kpk, kns = 1, kds = ld;
        } else {
          for (i64 j = 0; j < nb; ++j)
            for (i64 kk = 0; kk < d; ++kk) kpk[j * d + kk] = kb[j * J.k_ns + kk * J.k_ds];
          kb = kpk, kns = d, kds = 1;
        }
      }
      auto qk = [&](Epilogue ep) {
        for (i64 p = 0; p < cols; p += NC) {
          const T* qp = qt + p * d;
          T* sp = st + p * NB;
          if (kds == 1 && spread)
            qk_panel<true, true>(kb, kns, 1, qp, d, sp, nb, ep.at(p), pf);
          else if (kds == 1)
            qk_panel<true, false>(kb, kns, 1, qp, d, sp, nb, ep.at(p), pf);
          else if (spread)
            qk_panel<false, true>(kb, kns, kds, qp, d, sp, nb, ep.at(p), pf);
          else
            qk_panel<false, false>(kb, kns, kds, qp, d, sp, nb, ep.at(p), pf);
        }
      };
      // Masks change scores after Q K^T, so only plain blocks fold the max early.
      const bool plain = !J.mask && block_fully_kept(J, jb, nb);
      qk(plain ? Epilogue{cm} : Epilogue{});
      auto at = [st](i64 i, i64 j) -> T& { return st[(i / NC) * NB * NC + j * NC + i % NC]; };
      if (J.mask) apply_mask(J, jb, nb, at);
      if (!block_fully_kept(J, jb, nb)) apply_band(J, jb, nb, at);
      softmax_cols(nb, cols, st, m, l, al, plain ? cm : nullptr);
      const T* vb = v + jb * J.v_ns;
      for (i64 p = 0; p < cols; p += NC) {
        const T* pp = st + p * NB;
        T* op = ot + p * dv;
        if (uv && spread)
          pv_panel<true, true>(vb, J.v_ns, 1, pp, nb, dv, op, al + p, pf);
        else if (uv)
          pv_panel<true, false>(vb, J.v_ns, 1, pp, nb, dv, op, al + p, pf);
        else if (spread)
          pv_panel<false, true>(vb, J.v_ns, J.v_ds, pp, nb, dv, op, al + p, pf);
        else
          pv_panel<false, false>(vb, J.v_ns, J.v_ds, pp, nb, dv, op, al + p, pf);
      }
    }
    return BlockState<T>{m, l, ot, 1, NC, NC, dv * NC};
  }

  // ---- decode path ------------------------------------------------------------
  // s[r * NBD + jj] = q_r . K_jj for NK keys whose rows start kstride apart.
  template <int R, int NK>
  static void dot_tile(const T* qp, i64 dp, const T* kr0, i64 kstride, T* s) {
    V acc[R][NK];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) acc[r][jj] = vzero<T, W>();
    // This path streams K once from memory: ask for the rows two tiles ahead
    // (before the loop, which needs every register; prefetches never fault).
    for (int jj = 0; jj < NK; ++jj)
      for (i64 c = 0; c < dp; c += 64 / static_cast<i64>(sizeof(T)))
        __builtin_prefetch(kr0 + (2 * NK + jj) * kstride + c);
    for (i64 kk = 0; kk < dp; kk += W) {
      V kv[NK];
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) kv[jj] = vload<T, W>(kr0 + jj * kstride + kk);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V qv = vload<T, W>(qp + r * dp + kk);
#pragma GCC unroll 8
        for (int jj = 0; jj < NK; ++jj) acc[r][jj] = vfma<T, W>(qv, kv[jj], acc[r][jj]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int jj = 0; jj < NK; ++jj) s[r * NBD + jj] = hsum<T, W>(acc[r][jj]);
  }

  // o[r][c..] = o[r][c..] * alpha[r] + sum_j p[r][j] V_j[c..], CV vectors wide.
  template <int R, int CV>
  static void pv_dec(const T* p, i64 nb, const T* vb, i64 vstride, T* o, i64 dvp, const T* al) {
    V acc[R][CV];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V a = vset1<T, W>(al[r]);
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) acc[r][cv] = vload<T, W>(o + r * dvp + cv * W) * a;
    }
    for (i64 j = 0; j < nb; ++j) {
      const T* vr = vb + j * vstride;
      V b[CV];
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) b[cv] = vload<T, W>(vr + cv * W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const V x = vset1<T, W>(p[r * NBD + j]);
#pragma GCC unroll 16
        for (int cv = 0; cv < CV; ++cv) acc[r][cv] = vfma<T, W>(x, b[cv], acc[r][cv]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int cv = 0; cv < CV; ++cv) vstore<T, W>(o + r * dvp + cv * W, acc[r][cv]);
  }

  template <int R>
  static BlockState<T> run_decode(const BlockJob& J, T* ws) {
    constexpr int NK = R == 1 ? 8 : (R == 2 ? 4 : 2);
    constexpr int CV = R == 1 ? 8 : (R == 4 ? 2 : 4);
    const i64 d = J.d, dv = J.dv;
    const i64 dp = round_up(d, W), dvp = round_up(dv, W);
    T* qp = ws;
    T* s = qp + R * dp;
    T* o = s + R * NBD;
    T* kpk = o + R * dvp;
    T* vpk = kpk + NBD * dp;
    T* m = vpk + NBD * dvp;
    T* l = m + RD;
    T* al = l + RD;

    const T* q = static_cast<const T*>(J.q);
    const T qs = static_cast<T>(J.qscale);
    for (int r = 0; r < R; ++r) {
      const T* qr = q + (J.i0 + r) * J.q_ms;
      for (i64 kk = 0; kk < d; ++kk) qp[r * dp + kk] = qr[kk * J.q_ds] * qs;
      for (i64 kk = d; kk < dp; ++kk) qp[r * dp + kk] = 0;
      m[r] = -kInf;
      l[r] = 0;
      for (i64 c = 0; c < dvp; ++c) o[r * dvp + c] = 0;
    }

    const T* k = static_cast<const T*>(J.k);
    const T* v = static_cast<const T*>(J.v);
    const bool direct_k = J.k_ds == 1 && d == dp;
    const bool direct_v = J.v_ds == 1 && dv == dvp;
    for (i64 jb = J.j0; jb < J.j1; jb += NBD) {
      const i64 nb = J.j1 - jb < NBD ? J.j1 - jb : NBD;
      const T* kb = k + jb * J.k_ns;
      i64 ks = J.k_ns;
      if (!direct_k) {
        for (i64 j = 0; j < nb; ++j) {
          const T* kr = kb + j * J.k_ns;
          for (i64 kk = 0; kk < d; ++kk) kpk[j * dp + kk] = kr[kk * J.k_ds];
          for (i64 kk = d; kk < dp; ++kk) kpk[j * dp + kk] = 0;
        }
        kb = kpk;
        ks = dp;
      }
      // While K streams through the dot products, ask for the same keys' V
      // rows, so the memory system stays busy through the P V pass too (this
      // path is bound by reading K and V once).
      const T* vnext = v + jb * J.v_ns;
      auto prefetch_v = [&](i64 j0, i64 n) {
        if (J.v_ds == 1)
          for (i64 jj = j0; jj < j0 + n; ++jj)
            for (i64 c = 0; c < dv; c += 64 / static_cast<i64>(sizeof(T)))
              __builtin_prefetch(vnext + jj * J.v_ns + c, 0, 2);
      };
      i64 j = 0;
      for (; j + NK <= nb; j += NK) {
        dot_tile<R, NK>(qp, dp, kb + j * ks, ks, s + j);
        prefetch_v(j, NK);
      }
      for (; j < nb; ++j) {
        dot_tile<R, 1>(qp, dp, kb + j * ks, ks, s + j);
        prefetch_v(j, 1);
      }

      auto at = [s](i64 i, i64 jj) -> T& { return s[i * NBD + jj]; };
      if (J.mask) apply_mask(J, jb, nb, at);
      if (!block_fully_kept(J, jb, nb)) apply_band(J, jb, nb, at);

      const i64 nbp = round_up(nb, W);
      for (int r = 0; r < R; ++r) {
        T* sr = s + r * NBD;
        for (i64 jj = nb; jj < nbp; ++jj) sr[jj] = -kInf;
        V mx = vset1<T, W>(-kInf);
        for (i64 jj = 0; jj < nbp; jj += W) mx = vmax<T, W>(mx, vload<T, W>(sr + jj));
        const T mblk = hmax<T, W>(mx);
        const T mnew = m[r] > mblk ? m[r] : mblk;
        const T mu = mnew == -kInf ? T(0) : mnew;
        const V mv = vset1<T, W>(mu);
        V ls = vzero<T, W>();
        for (i64 jj = 0; jj < nbp; jj += W) {
          const V e = vexp2<T, W>(vload<T, W>(sr + jj) - mv);
          vstore<T, W>(sr + jj, e);
          ls += e;
        }
        // NaN in the row: keep it visible in m, l and the output.
        const T a = vexp2<T, W>(vset1<T, W>(m[r] - mu))[0];
        al[r] = a;
        m[r] = mnew;
        l[r] = l[r] * a + hsum<T, W>(ls);
      }

      const T* vb = v + jb * J.v_ns;
      i64 vs = J.v_ns;
      if (!direct_v) {
        for (i64 jj = 0; jj < nb; ++jj) {
          const T* vr = vb + jj * J.v_ns;
          for (i64 c = 0; c < dv; ++c) vpk[jj * dvp + c] = vr[c * J.v_ds];
          for (i64 c = dv; c < dvp; ++c) vpk[jj * dvp + c] = 0;
        }
        vb = vpk;
        vs = dvp;
      }
      i64 c = 0;
      for (; c + CV * W <= dvp; c += CV * W) pv_dec<R, CV>(s, nb, vb + c, vs, o + c, dvp, al);
      for (; c < dvp; c += W) pv_dec<R, 1>(s, nb, vb + c, vs, o + c, dvp, al);
    }
    return BlockState<T>{m, l, o, dvp, 1, RD + 1, 0};
  }

  static BlockState<T> run(const BlockJob& J, void* wsv) {
    T* ws = static_cast<T*>(wsv);
    if (J.rows <= RD) {
      switch (J.rows) {
        case 1:
          return run_decode<1>(J, ws);
        case 2:
          if constexpr (RD >= 2) return run_decode<2>(J, ws);
          break;
        case 3:
          if constexpr (RD >= 3) return run_decode<3>(J, ws);
          break;
        case 4:
          if constexpr (RD >= 4) return run_decode<4>(J, ws);
          break;
        default:
          break;
      }
    }
    return run_blocked(J, ws);
  }

  static void exp2_many(const T* x, T* y, i64 n) {
    i64 i = 0;
    for (; i + W <= n; i += W) vstore<T, W>(y + i, vexp2<T, W>(vload<T, W>(x + i)));
    for (; i < n; ++i) y[i] = vexp2<T, W>(vset1<T, W>(x[i]))[0];
  }
};

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct Cfg {
  using I = Impl<T, W, MR, NV, MB, NB, RD, NBD>;
  static constexpr i64 MB_ = MB, NB_ = NB, RD_ = RD;
};

// Workspace size of one instruction set's pair of configurations (f32, f64).
template <class F, class D>
struct IsaOf {
  static_assert(F::MB_ == D::MB_ && F::NB_ == D::NB_ && F::RD_ == D::RD_);
  static std::size_t ws_bytes(DType dt, i64 d, i64 dv) {
    return dt == DType::f64 ? D::I::ws_elems(d, dv) * sizeof(double)
                            : F::I::ws_elems(d, dv) * sizeof(float);
  }
  static i64 block_keys(DType dt, i64 d, i64 dv) {
    return dt == DType::f64 ? D::I::block_keys(d, dv) : F::I::block_keys(d, dv);
  }
};

// The table is built by the including TU outside its target pragma (only
// addresses are taken there, nothing wider than the baseline runs).
#define STRATA_CPU_ISA_TABLE(NAME, F, D)                                                        \
  IsaKernels {                                                                                  \
    NAME, F::MB_, F::NB_, F::RD_, &IsaOf<F, D>::ws_bytes, &IsaOf<F, D>::block_keys, &F::I::run, \
        &D::I::run, &F::I::exp2_many, &D::I::exp2_many                                          \
  }
