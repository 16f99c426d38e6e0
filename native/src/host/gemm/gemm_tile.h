// The tile (gemm_kernels.h) for one vector width, written once: included inside the anonymous
// namespace of an ISA's file (gemm_avx2.cc, gemm_avx512.cc), which defines the lanes L, the
// widest tile in vectors MAX_V, the vector types Vf and Mask, and these operations on them:
// zero, load, store, fmadd, mul, broadcast (a float in every lane), laneMask(valid),
// maskStoreF32, maskStoreBf16 (f32ToBf16 of the valid lanes), maskLoad (zero past valid),
// widen (L bf16 -> fp32) and widenPair (2L paired bf16 -> the even ones, the odd ones). Each
// ISA keeps its own instructions; the loop, its order of FMAs and the epilogues are these.
// (no include guard: one inclusion per ISA)

template <int R, int V, bool F32>
void tile(const Tile& t) {
  Vf c[R][V];
  if (t.first) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = zero();
  } else {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) c[r][v] = load(t.acc + r * t.accStride + v * L);
  }
  const float* xr[R];
  for (int r = 0; r < R; r++) xr[r] = t.xp + r * t.xStride;
  const uint16_t* wp = t.wp;
  const float* wf = t.wf;
  const int64_t ws = t.width;
  for (int64_t k = 0; k < t.kc; k++, wp += ws) {
    Vf b[V];
    if (F32) {
      for (int v = 0; v < V; v++) b[v] = load(wf + k * ws + v * L);
    } else {
      for (int v = 0; v + 1 < V; v += 2) widenPair(wp + v * L, b[v], b[v + 1]);
      if (V % 2) b[V - 1] = widen(wp + (V - 1) * L);
    }
    for (int r = 0; r < R; r++) {
      const Vf a = broadcast(xr[r] + k);
      for (int v = 0; v < V; v++) c[r][v] = fmadd(a, b[v], c[r][v]);
    }
  }
  if (!t.last) {
    for (int r = 0; r < R; r++)
      for (int v = 0; v < V; v++) store(t.acc + r * t.accStride + v * L, c[r][v]);
    return;
  }
  for (int v = 0; v < V; v++) {
    const int valid = t.n - v * L;
    if (valid <= 0) break;
    const Mask m = laneMask(valid);
    if (t.epilogue == Epilogue::F32) {
      float* y = static_cast<float*>(t.y) + v * L;
      for (int r = 0; r < R; r++) maskStoreF32(y + r * t.yStride, m, c[r][v]);
      continue;
    }
    uint16_t* y = static_cast<uint16_t*>(t.y) + v * L;
    if (t.epilogue == Epilogue::Bf16) {
      for (int r = 0; r < R; r++) maskStoreBf16(y + r * t.yStride, m, valid, c[r][v]);
      continue;
    }
    const Vf col = maskLoad(t.colScale + v * L, m);
    for (int r = 0; r < R; r++) {
      const Vf row = broadcast(t.rowScale + r);
      const Vf s = t.colScaleFirst ? mul(mul(c[r][v], col), row) : mul(mul(c[r][v], row), col);
      maskStoreBf16(y + r * t.yStride, m, valid, s);
    }
  }
}

/** the tile of V vectors for the panel's width (MAX_V for a wider one) */
template <int R, bool F32, int V = 1>
void byWidth(const Tile& t) {
  if constexpr (V == MAX_V) {
    return tile<R, V, F32>(t);
  } else {
    if (t.width / L == V) return tile<R, V, F32>(t);
    return byWidth<R, F32, V + 1>(t);
  }
}

template <bool F32>
void byRows(const Tile& t) {
  withRows(t.mr, [&](auto rows) { byWidth<decltype(rows)::value, F32>(t); });
}

/** the ISA's TileFn */
void anyTile(const Tile& t) { return t.wf ? byRows<true>(t) : byRows<false>(t); }

/** the ISA's WidenFn: kc rows of `width` paired bf16 -> fp32 in output order */
void widenPanel(const uint16_t* wp, int64_t kc, int width, float* dst) {
  for (int64_t k = 0; k < kc; k++, wp += width, dst += width) {
    int v = 0;
    for (; v + 2 * L <= width; v += 2 * L) {
      Vf lo, hi;
      widenPair(wp + v, lo, hi);
      store(dst + v, lo);
      store(dst + v + L, hi);
    }
    if (v < width) store(dst + v, widen(wp + v));
  }
}
