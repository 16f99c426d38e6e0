import type { ModelConfig, PleConfig } from '../../config/modelConfig.ts';

// PLE n-gram hashing as the reference computes it (HF modeling_qwen4_exp.py
// `_build_layer_multipliers`, `_find_nth_prime_after`, `Qwen4ExpTextNGramEmbedding`; ATOM
// atom/model_ops/qwen4_exp/ple.py `Qwen4ExpNGramEmbedding`, `_ngram_ids_kernel`). Pure
// integer code on the host, shared by every backend. BigInt where the reference uses 64-bit
// integers: its multipliers exceed 2^53, so a JS number would lose them.

const MASK64 = (1n << 64n) - 1n;
const TWO63 = 1n << 63n;
const SPLITMIX_GAMMA = 0x9e3779b97f4a7c15n;
/** The seeds of successive PLE layers are this prime apart (HF `_PRIME_1`, ATOM `_PLE_LAYER_PRIME`). */
export const PLE_LAYER_SEED_STRIDE = 10007;
/** Ids travel as i32 (WGSL has no 64-bit integers): the padded table must stay below 2^31 rows. */
const MAX_TABLE_ROWS = 2 ** 31;

/** splitmix64's output function of state v + gamma, all mod 2^64. */
export function splitmix64(v: bigint): bigint {
  let z = (v + SPLITMIX_GAMMA) & MASK64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return z ^ (z >> 31n);
}

/**
 * The ngramSize odd multipliers of PLE layer pleIndex (its position in ple_layer_ids),
 * shared by all heads: m[i] = 2 * (splitmix64(seed + 10007*pleIndex + gamma*(i+1) mod 2^64)
 * mod half) + 1, half = max(1, ((2^63 - 1) // vocabSize) // 2). So m[i] < (2^63-1)/vocabSize:
 * a token id times a multiplier stays below 2^63, the reference's int64 never wraps.
 */
export function pleLayerMultipliers(seed: number, vocabSize: number, ngramSize: number, pleIndex: number): bigint[] {
  if (!Number.isSafeInteger(seed)) throw new Error(`ple: seed ${seed} must be a safe integer`);
  if (!Number.isSafeInteger(vocabSize) || vocabSize < 1) throw new Error(`ple: vocabSize ${vocabSize} must be a positive integer`);
  const half = (TWO63 - 1n) / BigInt(vocabSize) / 2n;
  const bound = half > 1n ? half : 1n;
  const base = BigInt(seed) + BigInt(PLE_LAYER_SEED_STRIDE) * BigInt(pleIndex);
  return Array.from({ length: ngramSize }, (_, i) => 2n * (splitmix64((base + SPLITMIX_GAMMA * BigInt(i + 1)) & MASK64) % bound) + 1n);
}

function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  for (let d = 3; d * d <= n; d += 2) if (n % d === 0) return false;
  return true;
}

/** The count-th prime above start (HF `_find_nth_prime_after`). */
function nthPrimeAfter(start: number, count: number): number {
  let p = start;
  for (let i = 0; i < count; i++) {
    p++;
    while (!isPrime(p)) p++;
  }
  return p;
}

export function pleHeadCount(ple: PleConfig): number {
  return (ple.ngramSize - 1) * ple.headsPerNgram;
}

/** j: the position of decoder layer `layer` among the PLE layers (0 for Flash-Next's layer 1). */
export function pleIndexOf(config: ModelConfig, layer: number): number {
  const j = config.ple.layerIds.indexOf(layer);
  if (j < 0) throw new Error(`ple: layer ${layer} carries no PLE (PLE layers: ${config.ple.layerIds.join(', ')})`);
  return j;
}

/** The derived constants of one PLE layer: what the checkpoint's buffers must equal. */
export interface PleTables {
  /** [ngramSize] `layer_multipliers` */
  multipliers: bigint[];
  /** [heads] `ngram_heads_vocab_sizes`: head h's size is the (g+1)-th prime >= base, g = j*heads + h */
  vocabSizes: number[];
  /** [heads] `ngram_heads_offsets`: first row of head h in the table (sum of the sizes before it) */
  offsets: number[];
  /** sum of the sizes */
  totalRows: number;
  /** rows of `ngram_embedding.weight`: totalRows rounded up to a multiple of makeNgramVocabSizeDivisibleBy */
  paddedRows: number;
  /** columns of the table: embedDim / heads */
  headDim: number;
}

export function pleTables(config: ModelConfig, layer: number): PleTables {
  const ple = config.ple;
  const j = pleIndexOf(config, layer);
  const heads = pleHeadCount(ple);
  const vocabSizes: number[] = [];
  const offsets: number[] = [];
  let total = 0;
  // the (g+1)-th prime >= base for g = j*heads + h: first skip the earlier PLE layers' primes
  let prime = nthPrimeAfter(ple.ngramVocabSizeBase - 1, j * heads);
  for (let h = 0; h < heads; h++) {
    prime = nthPrimeAfter(prime, 1);
    vocabSizes.push(prime);
    offsets.push(total);
    total += prime;
  }
  const div = ple.makeNgramVocabSizeDivisibleBy;
  const paddedRows = Math.ceil(total / div) * div;
  if (paddedRows >= MAX_TABLE_ROWS) throw new Error(`ple: the n-gram table has ${paddedRows} rows; ids must fit in i32`);
  return {
    multipliers: pleLayerMultipliers(ple.seed, config.vocabSize, ple.ngramSize, j),
    vocabSizes,
    offsets,
    totalRows: total,
    paddedRows,
    headDim: ple.embedDim / heads,
  };
}

/** What the id computation needs (pleTables of the layer, and the config's vocabulary). */
export interface PleHashParams {
  ngramSize: number;
  headsPerNgram: number;
  /** [ngramSize]: m[0] for the current token, m[s] for the token s steps back */
  multipliers: readonly bigint[];
  /** [heads], bigram heads first */
  vocabSizes: readonly number[];
  /** [heads] */
  offsets: readonly number[];
  vocabSize: number;
  eosTokenId: number;
}

function checkToken(id: number, vocabSize: number, where: string): void {
  if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw new Error(`ple: token id ${id} ${where} is outside the vocabulary [0, ${vocabSize})`);
}

/**
 * Table rows [T, heads] (row-major, offsets included) for the token ids [T] of one sequence.
 * `context`: the ngramSize-1 tokens before tokens[0], oldest first (a chunk continuing a
 * sequence); a fresh sequence has EOS there (the default), as HF's `previous_context`.
 *
 * Per token t, with prev_s the token s steps back (s = 1..ngramSize-1): prev_s is replaced
 * by EOS when any token at t-s .. t-1 is EOS (history resets at EOS; the current token is
 * never replaced, so an EOS token still sees what it ends). Then, in plain 64-bit integers
 * (each product < 2^63, checked; XOR of such values stays below 2^63, so nothing is negative):
 *   key_1 = t*m[0] XOR prev_1*m[1],  key_s = key_{s-1} XOR prev_s*m[s]
 *   id[(s-1)*headsPerNgram + h] = key_s mod size + offset   (of that head)
 * so heads 0..headsPerNgram-1 hash the bigram, the next ones the trigram, and so on.
 */
export function pleNgramIds(tokens: Int32Array, p: PleHashParams, context?: Int32Array): Int32Array {
  const n = p.ngramSize;
  const hpn = p.headsPerNgram;
  const heads = (n - 1) * hpn;
  if (p.multipliers.length !== n) throw new Error(`ple: ${p.multipliers.length} multipliers given, ngramSize is ${n}`);
  if (p.vocabSizes.length !== heads || p.offsets.length !== heads) {
    throw new Error(`ple: ${p.vocabSizes.length} head sizes and ${p.offsets.length} offsets given, the config has ${heads} heads`);
  }
  for (let h = 0; h < heads; h++) {
    if (p.offsets[h] + p.vocabSizes[h] > MAX_TABLE_ROWS) throw new Error(`ple: head ${h} ends past row 2^31; ids must fit in i32`);
  }
  checkToken(p.eosTokenId, p.vocabSize, '(EOS)');
  const c = n - 1;
  const ctx = context ?? new Int32Array(c).fill(p.eosTokenId);
  if (ctx.length !== c) throw new Error(`ple: context has ${ctx.length} tokens, expected ngramSize - 1 = ${c}`);
  const hist = new Int32Array(c + tokens.length);
  hist.set(ctx);
  hist.set(tokens, c);
  hist.forEach((id, i) => {
    checkToken(id, p.vocabSize, i < c ? `at context position ${i}` : `at position ${i - c}`);
  });
  const sizes = p.vocabSizes.map((v) => BigInt(v));
  const product = (id: number, s: number): bigint => {
    const v = BigInt(id) * p.multipliers[s];
    if (v < 0n || v >= TWO63) throw new Error(`ple: ${id} * multiplier ${s} = ${v} leaves [0, 2^63) (the reference's int64 would wrap)`);
    return v;
  };
  const out = new Int32Array(tokens.length * heads);
  let lastEos = -1; // the last EOS position strictly before i
  for (let i = 0; i < c; i++) if (hist[i] === p.eosTokenId) lastEos = i;
  for (let i = c; i < hist.length; i++) {
    const row = (i - c) * heads;
    let key = product(hist[i], 0);
    for (let s = 1; s < n; s++) {
      key ^= product(i - s > lastEos ? hist[i - s] : p.eosTokenId, s);
      for (let h = 0; h < hpn; h++) {
        const head = (s - 1) * hpn + h;
        out[row + head] = Number(key % sizes[head]) + p.offsets[head];
      }
    }
    if (hist[i] === p.eosTokenId) lastEos = i;
  }
  return out;
}
