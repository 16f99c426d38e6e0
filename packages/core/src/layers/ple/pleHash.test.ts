import { describe, expect, it } from 'vitest';
import { getConfig } from '../../config/presets.ts';
import { Rng } from '../../numerics/rng.ts';
import { pleHashMultiplier, pleHeadVocabSizes, pleNgramIds, splitmix64, type PleHashParams } from './pleHash.ts';

const tiny = getConfig('tiny');
const params: PleHashParams = {
  ngramSize: tiny.ple.ngramSize,
  headsPerNgram: tiny.ple.headsPerNgram,
  vocabSizes: pleHeadVocabSizes(tiny.ple),
  vocabSize: tiny.vocabSize,
  eosTokenId: tiny.eosTokenId,
};
const HEADS = 16;
const EOS = tiny.eosTokenId;

describe('PLE n-gram hashing', () => {
  it('splitmix64 gives the reference outputs (state 0: first two outputs of the generator)', () => {
    expect(splitmix64(0n)).toBe(0xe220a8397b1dcdafn);
    expect(splitmix64(0x9e3779b97f4a7c15n)).toBe(0x6e789e6aa1b965f4n);
  });

  it('multipliers are odd 64-bit integers, distinct per (head, lag)', () => {
    const seen = new Set<bigint>();
    for (let j = 0; j < HEADS; j++) {
      for (let p = 0; p < 3; p++) {
        const m = pleHashMultiplier(j, p, 3);
        expect(m & 1n).toBe(1n);
        expect(m < 1n << 64n && m > 0n).toBe(true);
        seen.add(m);
      }
    }
    expect(seen.size).toBe(HEADS * 3);
  });

  it('head vocabulary sizes are the primes at or above the base, increasing', () => {
    expect(pleHeadVocabSizes(tiny.ple)).toEqual([101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179]);
    expect(pleHeadVocabSizes(getConfig('flash-next').ple).slice(0, 3)).toEqual([1000003, 1000033, 1000037]);
  });

  it('follows the stated formula (an independent recomputation of a trigram and a bigram head)', () => {
    const tokens = Int32Array.from([5, 300, 42, 7]);
    const ids = pleNgramIds(tokens, params);
    const mask = (1n << 64n) - 1n;
    const mult = (j: number, p: number) => splitmix64(BigInt(j * 3 + p)) | 1n;
    const t = 3;
    const j = 12; // trigram head 4: lags 0, 1, 2 = tokens 7, 42, 300
    const tri = ((7n * mult(j, 0)) & mask) ^ ((42n * mult(j, 1)) & mask) ^ ((300n * mult(j, 2)) & mask);
    expect(ids[t * HEADS + j]).toBe(Number(tri % BigInt(params.vocabSizes[j])));
    // bigram head 0 at t = 0: the previous token is NO_TOKEN = vocabSize
    const bi = ((5n * mult(0, 0)) & mask) ^ ((BigInt(tiny.vocabSize) * mult(0, 1)) & mask);
    expect(ids[0]).toBe(Number(bi % BigInt(params.vocabSizes[0])));
  });

  it('gives ids inside every head table; equal n-grams hash equally', () => {
    const rng = new Rng(1);
    const tokens = Int32Array.from({ length: 200 }, () => rng.int(0, EOS));
    const ids = pleNgramIds(tokens, params);
    const outside = Array.from(ids).filter((id, i) => !(id >= 0 && id < params.vocabSizes[i % HEADS]));
    expect(outside).toEqual([]);
    // and the ids spread over the tables (not a constant)
    expect(new Set(Array.from(ids).filter((_, i) => i % HEADS === 0)).size).toBeGreaterThan(50);
    // the same bigram at two places: bigram heads equal, trigram heads differ (other t-2)
    const seq = Int32Array.from([1, 2, 3, 9, 2, 3]);
    const s = pleNgramIds(seq, params);
    expect(s.subarray(2 * HEADS, 2 * HEADS + 8)).toEqual(s.subarray(5 * HEADS, 5 * HEADS + 8));
    expect(s.subarray(2 * HEADS + 8, 3 * HEADS)).not.toEqual(s.subarray(5 * HEADS + 8, 6 * HEADS));
  });

  it('resets the history after EOS: the next document hashes as at the start of a sequence', () => {
    const doc = [17, 250, 3, 99];
    const alone = pleNgramIds(Int32Array.from(doc), params);
    const packed = pleNgramIds(Int32Array.from([8, 400, 23, EOS, ...doc]), params);
    expect(packed.subarray(4 * HEADS)).toEqual(alone);
    // the EOS token itself still sees the document it ends
    const eosAlone = pleNgramIds(Int32Array.from([EOS]), params);
    expect(packed.subarray(3 * HEADS, 4 * HEADS)).not.toEqual(eosAlone);
    // without the EOS the history crosses over
    const unpacked = pleNgramIds(Int32Array.from([8, 400, 23, 5, ...doc]), params);
    expect(unpacked.subarray(4 * HEADS, 6 * HEADS)).not.toEqual(alone.subarray(0, 2 * HEADS));
    // only the first two tokens after EOS can see across (ngramSize 3): the third is the same
    expect(unpacked.subarray(6 * HEADS)).toEqual(alone.subarray(2 * HEADS));
  });

  it('rejects a token id outside the vocabulary, naming it and its position', () => {
    expect(() => pleNgramIds(Int32Array.from([1, 512]), params)).toThrow(/token id 512 at position 1 is outside the vocabulary \[0, 512\)/);
    expect(() => pleNgramIds(Int32Array.from([-1]), params)).toThrow(/token id -1 at position 0/);
  });
});
