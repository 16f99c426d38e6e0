import type { PleConfig } from '../../config/modelConfig.ts';

// The PLE n-gram ids (model.md "PLE"): pure integer code, computed on the host, shared by
// every backend. Follows DeepSeek's Engram hashing (the design PLE comes from: per-head
// prime table sizes, odd multipliers, XOR of id * multiplier, mod the head's prime), with
// the multipliers derived by splitmix64 as model.md states. Defined precisely so that a
// real table could be loaded:
//
// - Heads j = 0 .. (ngramSize-1)*headsPerNgram - 1: j = (order-2)*headsPerNgram + h for
//   n-gram order 2..ngramSize (bigram heads first) and h = 0..headsPerNgram-1.
// - Head j's table has V_j rows, V_j = the j-th prime >= ngramVocabSizeBase, increasing
//   (V_0 = the smallest prime >= base). Engram searches its primes the same way (next
//   unused prime above the per-order base; the orders share the base here).
// - The n-gram of head j at token t is the ids at lags p = 0..order-1 (p = 0 is token t,
//   p = 1 is t-1, ...). The id at lag p is the token id, or NO_TOKEN = vocabSize (an id no
//   real token has) when t-p < 0 (before the start) or when an EOS token sits at a position
//   in [t-p, t-1] (the history resets at EOS: the EOS token belongs to the document it
//   ends and still sees that document; the token after it starts fresh).
// - multiplier(j, p) = splitmix64(PLE_HASH_SEED + j*ngramSize + p) | 1, a 64-bit odd integer.
// - hash = XOR over p of (id_p * multiplier(j, p) mod 2^64), as an unsigned 64-bit integer;
//   row id_j = hash mod V_j.

export const PLE_HASH_SEED = 0n;

const MASK64 = (1n << 64n) - 1n;

/** splitmix64 (Steele, Lea, Flood): the finalizer of state x + golden gamma, all mod 2^64. */
export function splitmix64(x: bigint): bigint {
  let z = (x + 0x9e3779b97f4a7c15n) & MASK64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

export function pleHeadCount(ple: PleConfig): number {
  return (ple.ngramSize - 1) * ple.headsPerNgram;
}

/** The odd multiplier of head j at lag p. */
export function pleHashMultiplier(head: number, lag: number, ngramSize: number): bigint {
  return splitmix64(PLE_HASH_SEED + BigInt(head * ngramSize + lag)) | 1n;
}

function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/** V_j for every head: the first `heads` primes >= ngramVocabSizeBase, increasing. */
export function pleHeadVocabSizes(ple: PleConfig): number[] {
  if (!Number.isSafeInteger(ple.ngramVocabSizeBase) || ple.ngramVocabSizeBase < 2) {
    throw new Error(`ple: ngramVocabSizeBase ${ple.ngramVocabSizeBase} must be an integer >= 2`);
  }
  const sizes: number[] = [];
  for (let n = ple.ngramVocabSizeBase; sizes.length < pleHeadCount(ple); n++) if (isPrime(n)) sizes.push(n);
  return sizes;
}

export interface PleHashParams {
  ngramSize: number;
  headsPerNgram: number;
  /** V_j per head (pleHeadVocabSizes) */
  vocabSizes: readonly number[];
  vocabSize: number;
  eosTokenId: number;
}

/** Row ids [T, heads] (row-major) of every head's table for the token ids [T] of one sequence. */
export function pleNgramIds(tokens: Int32Array, p: PleHashParams): Int32Array {
  const heads = (p.ngramSize - 1) * p.headsPerNgram;
  if (p.vocabSizes.length !== heads) throw new Error(`ple: ${p.vocabSizes.length} head vocabulary sizes given, the config has ${heads} heads`);
  const noToken = BigInt(p.vocabSize);
  const mult: bigint[][] = Array.from({ length: heads }, (_, j) => Array.from({ length: p.ngramSize }, (_, lag) => pleHashMultiplier(j, lag, p.ngramSize)));
  const mods = p.vocabSizes.map((v) => BigInt(v));
  const out = new Int32Array(tokens.length * heads);
  const lagIds: bigint[] = new Array(p.ngramSize);
  let lastEos = -1; // the last EOS position before t
  for (let t = 0; t < tokens.length; t++) {
    const id = tokens[t];
    if (!Number.isInteger(id) || id < 0 || id >= p.vocabSize) throw new Error(`ple: token id ${id} at position ${t} is outside the vocabulary [0, ${p.vocabSize})`);
    for (let lag = 0; lag < p.ngramSize; lag++) lagIds[lag] = t - lag > lastEos ? BigInt(tokens[t - lag]) : noToken;
    for (let j = 0; j < heads; j++) {
      const order = 2 + Math.floor(j / p.headsPerNgram);
      let hash = 0n;
      for (let lag = 0; lag < order; lag++) hash ^= (lagIds[lag] * mult[j][lag]) & MASK64;
      out[t * heads + j] = Number(hash % mods[j]);
    }
    if (id === p.eosTokenId) lastEos = t;
  }
  return out;
}
