// The canonical reduction order (README "Canonical reduction order"): the one order in which
// every backend adds the terms of a long reduction, so that kernels that reduce in parallel (a
// wavefront's lanes, a workgroup, SIMD registers) give the reference's bits. Version 1:
//
//   64 logical lanes; lane l owns the 8-element chunks starting at 8l + 512i (i = 0, 1, ...)
//   and adds them into its fp32 sum in i order, a chunk's 8 terms in order, starting from +0;
//   then a fixed xor butterfly over the lanes, m = 32, 16, 8, 4, 2, 1: every lane adds the sum
//   of lane l xor m (fp32 addition is commutative, so every lane ends with the same value).
//
// It depends only on the number of terms: not on the grid, the block size, the number of
// threads, or the vendor's wavefront width (a 32-wide wavefront holds two logical lanes per
// thread; a CPU holds the 64 lane sums in SIMD registers). With H = 2560 a row is exactly five
// 512-element steps, the tiling ATOM's HC kernels use. A sum of bf16 squares or products is
// exact in fp32 before it is added, so an FMA gives the same bits as the multiply and the add.

const fr = Math.fround;

export const CANONICAL_ORDER_VERSION = 1;
/** the logical lanes of canonical order v1 */
export const CANONICAL_LANES = 64;
/** the consecutive terms a lane adds before the next lane's chunk */
export const CANONICAL_CHUNK = 8;

/** lanes[l] = lane l's sum of term(j), j in [0, n), before the butterfly */
function fillLaneSums(n: number, term: (j: number) => number, lanes: Float32Array): void {
  if (!Number.isInteger(n) || n < 0) throw new Error(`canonical sum: ${n} terms`);
  const step = CANONICAL_LANES * CANONICAL_CHUNK;
  for (let l = 0; l < CANONICAL_LANES; l++) {
    let acc = 0;
    for (let base = l * CANONICAL_CHUNK; base < n; base += step) {
      const end = Math.min(base + CANONICAL_CHUNK, n);
      for (let j = base; j < end; j++) acc = fr(acc + term(j));
    }
    lanes[l] = acc;
  }
}

/** The 64 lane sums of v1 before the butterfly (each in fp32): term(j) for j in [0, n). */
export function canonicalLaneSums(n: number, term: (j: number) => number): Float32Array {
  const lanes = new Float32Array(CANONICAL_LANES);
  fillLaneSums(n, term, lanes);
  return lanes;
}

/** The butterfly of v1 over 64 lane sums: lane 0's value once every lane holds the total. */
export function canonicalButterfly(lanes: Float32Array): number {
  if (lanes.length !== CANONICAL_LANES) throw new Error(`canonical sum: ${lanes.length} lane sums, expected ${CANONICAL_LANES}`);
  const v = Float32Array.from(lanes);
  for (let m = CANONICAL_LANES / 2; m >= 1; m >>= 1) {
    const prev = Float32Array.from(v);
    for (let l = 0; l < CANONICAL_LANES; l++) v[l] = fr(prev[l] + prev[l ^ m]);
  }
  return v[0];
}

/** lane sums of canonicalSumF32, reused (the reference calls it once per row, head or token); a term that itself sums gets its own */
const scratch = new Float32Array(CANONICAL_LANES);
let scratchInUse = false;

/**
 * The fp32 sum of term(j), j in [0, n), in canonical order v1 (term values are fp32): the same
 * adds as canonicalButterfly(canonicalLaneSums(n, term)), without their arrays. At butterfly
 * step m only lanes l < m still feed lane 0, and for them l xor m = l + m, which this step
 * does not overwrite, so the butterfly runs in place.
 */
export function canonicalSumF32(n: number, term: (j: number) => number): number {
  const outer = !scratchInUse;
  const v = outer ? scratch : new Float32Array(CANONICAL_LANES);
  scratchInUse = true;
  try {
    fillLaneSums(n, term, v);
    for (let m = CANONICAL_LANES / 2; m >= 1; m >>= 1) {
      for (let l = 0; l < m; l++) v[l] = fr(v[l] + v[l + m]);
    }
    return v[0];
  } finally {
    if (outer) scratchInUse = false;
  }
}
