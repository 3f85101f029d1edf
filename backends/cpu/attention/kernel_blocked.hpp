// Part of the cpu backend's block kernels (see kernel_impl.hpp, which
// includes this after kernel_common.hpp). Same rules as kernel_impl.hpp:
// included inside an anonymous namespace after the target pragma, no include
// guard, no standard headers.
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

template <class T, int W, int MR, int NV, int MB, int NB, int RD, int NBD>
struct ImplBlocked : ImplCommon<T, W, MR, NV, MB, NB, RD, NBD> {
  using Common = ImplCommon<T, W, MR, NV, MB, NB, RD, NBD>;
  using Common::apply_band;
  using Common::apply_mask;
  using Common::block_fully_kept;
  using Common::block_keys;
  using Common::kInf;
  using Common::kPackPad;
  using Common::kStreamBytes;
  using Common::NC;
  using Common::prefetch_tile;
  using Common::round_up;
  using typename Common::Prefetcher;
  using typename Common::V;

  // ---- blocked path: micro-kernels ------------------------------------------
  // out[r * NC + v * W ..] = acc[r][v]: a register tile of either micro-kernel
  // back to its panel.
  template <int R>
  __attribute__((always_inline)) static void store_tile(T* out, const V (&acc)[R][NV]) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) vstore<T, W>(out + r * NC + v * W, acc[r][v]);
  }

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
    store_tile<R>(st, acc);
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

  // The tiles take their row count as a template argument; a panel's last
  // rows number r in [1, R], known only at run time: with_rows calls
  // f(Rows<r>{}).
  template <int R>
  struct Rows {
    static constexpr int value = R;
  };
  template <int R, class F>
  static void with_rows(int r, const F& f) {
    if constexpr (R >= 1) {
      if (r == R)
        f(Rows<R>{});
      else
        with_rows<R - 1>(r, f);
    }
  }

  // f(i, Rows<MR>{}) for each full tile of MR rows starting at row i, then
  // f(i, Rows<r>{}) for the last r < MR rows; a prefetch step after each.
  template <bool PF, class F>
  static void over_tiles(i64 n, Prefetcher& pf, const F& f) {
    i64 i = 0;
    for (; i + MR <= n; i += MR) {
      f(i, Rows<MR>{});
      if constexpr (PF) pf.step();
    }
    if (i < n) {
      with_rows<MR - 1>(static_cast<int>(n - i), [&](auto rows) { f(i, rows); });
      if constexpr (PF) pf.step();
    }
  }

  template <bool UK, bool PF>
  static void qk_panel(const T* kb, i64 kns, i64 kds, const T* qt, i64 d, T* st, i64 nb,
                       Epilogue ep, Prefetcher& pf) {
    if (ep.cmax)
      for (int c = 0; c < NC; ++c) ep.cmax[c] = -kInf;
    over_tiles<PF>(nb, pf, [&](i64 g, auto rows) {
      qk_tile<decltype(rows)::value, UK>(kb + g * kns, kns, kds, qt, d, st + g * NC, ep);
    });
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
    store_tile<R>(ot, acc);
  }

  template <bool UV, bool PF>
  static void pv_panel(const T* vb, i64 vns, i64 vds, const T* pt, i64 nb, i64 dv, T* ot,
                       const T* al, Prefetcher& pf) {
    over_tiles<PF>(dv, pf, [&](i64 c, auto rows) {
      pv_tile<decltype(rows)::value, UV>(vb + c * vds, vns, vds, pt, nb, ot + c * NC, al);
    });
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
};
