import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { REDUCE_ALGORITHMS, type ReduceAlgorithm } from '../graph/ops/spOps.ts';

// The per-element summation of tp bf16 partials, in the orders of numerics.md "How
// collectives add". Every fp32 add is rounded with Math.fround; bf16 rounding happens
// where the algorithm stores a bf16 value (each ring hop / chain link, or once at the end
// of a one-shot fp32 accumulation). Partials are bf16 bit patterns, one array per rank.

/** Throws unless `algorithm` is one of REDUCE_ALGORITHMS; names the bad value. */
export function checkReduceAlgorithm(algorithm: unknown, where: string): ReduceAlgorithm {
  if (typeof algorithm !== 'string' || !(REDUCE_ALGORITHMS as readonly string[]).includes(algorithm)) {
    throw new Error(`${where}: unknown reduction algorithm ${JSON.stringify(algorithm)}; expected one of ${REDUCE_ALGORITHMS.join(', ')}`);
  }
  return algorithm as ReduceAlgorithm;
}

/**
 * Ring order for the chunk owned by ring position `owner`: acc = x[c+1];
 * acc = bf(x[c+2] + acc); ...; acc = bf(x[c] + acc) (indices mod tp). Writes elements
 * [start, end) of the sum to out[outStart ...]. The operand order `x + acc` is the one
 * numerics.md writes; fp32 addition is commutative, so it does not change a result.
 */
export function reduceRingInto(partials: readonly Uint16Array[], owner: number, start: number, end: number, out: Uint16Array, outStart: number): void {
  const tp = partials.length;
  if (!Number.isInteger(owner) || owner < 0 || owner >= tp) {
    throw new Error(`reduceRingInto: owner ${owner} is not a ring position in [0, ${tp})`);
  }
  const first = partials[(owner + 1) % tp];
  for (let i = start; i < end; i++) {
    let acc = first[i];
    for (let hop = 2; hop <= tp; hop++) {
      const x = partials[(owner + hop) % tp][i];
      acc = f32ToBf16(Math.fround(bf16ToF32(x) + bf16ToF32(acc)));
    }
    out[outStart + i - start] = acc;
  }
}

/** One-shot: fp32 accumulation in rank order 0..tp-1, one bf16 rounding at the end. */
export function reduceOneShotInto(partials: readonly Uint16Array[], start: number, end: number, out: Uint16Array, outStart: number): void {
  const tp = partials.length;
  // tp = 1: nothing is added, the value passes through untouched (NaN payloads included).
  if (tp === 1) {
    out.set(partials[0].subarray(start, end), outStart);
    return;
  }
  for (let i = start; i < end; i++) {
    let acc = bf16ToF32(partials[0][i]);
    for (let r = 1; r < tp; r++) acc = Math.fround(acc + bf16ToF32(partials[r][i]));
    out[outStart + i - start] = f32ToBf16(acc);
  }
}

/** Ordered chain in rank order: acc = x0; acc = bf(acc + x1); ...; acc = bf(acc + x[tp-1]). */
export function reduceOrderedInto(partials: readonly Uint16Array[], start: number, end: number, out: Uint16Array, outStart: number): void {
  const tp = partials.length;
  for (let i = start; i < end; i++) {
    let acc = partials[0][i];
    for (let r = 1; r < tp; r++) {
      acc = f32ToBf16(Math.fround(bf16ToF32(acc) + bf16ToF32(partials[r][i])));
    }
    out[outStart + i - start] = acc;
  }
}

/** Elements [start, end) of the sum in `algorithm`'s order; `owner` matters only for 'ring'. */
export function reduceInto(
  algorithm: ReduceAlgorithm,
  owner: number,
  partials: readonly Uint16Array[],
  start: number,
  end: number,
  out: Uint16Array,
  outStart: number,
): void {
  switch (algorithm) {
    case 'ring':
      reduceRingInto(partials, owner, start, end, out, outStart);
      return;
    case 'oneshot':
      reduceOneShotInto(partials, start, end, out, outStart);
      return;
    case 'ordered':
      reduceOrderedInto(partials, start, end, out, outStart);
      return;
    default:
      checkReduceAlgorithm(algorithm, 'reduceInto');
  }
}

/** One element: the bf16 bits of the sum of `bits` (one bf16 pattern per rank) in `algorithm`'s order. */
export function reduceElement(algorithm: ReduceAlgorithm, bits: readonly number[], owner = 0): number {
  if (bits.length === 0) throw new Error('reduceElement: no partials (tp = 0)');
  const partials = bits.map((b) => Uint16Array.of(b));
  const out = new Uint16Array(1);
  reduceInto(algorithm, owner, partials, 0, 1, out, 0);
  return out[0];
}
