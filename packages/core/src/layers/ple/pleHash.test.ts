import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../config/modelConfig.ts';
import { getConfig } from '../../config/presets.ts';
import { Rng } from '../../numerics/rng.ts';
import { pleLayerMultipliers, pleNgramIds, pleTables, splitmix64, type PleHashParams } from './pleHash.ts';

const flash = getConfig('flash-next');
const tiny = getConfig('tiny');
const HEADS = 16;

function params(config: ModelConfig, layer: number): PleHashParams {
  const t = pleTables(config, layer);
  return {
    ngramSize: config.ple.ngramSize,
    headsPerNgram: config.ple.headsPerNgram,
    multipliers: t.multipliers,
    vocabSizes: t.vocabSizes,
    offsets: t.offsets,
    vocabSize: config.vocabSize,
    eosTokenId: config.eosTokenId,
  };
}

describe('PLE hash constants', () => {
  it('splitmix64 gives the reference outputs (state 0: first two outputs of the generator)', () => {
    expect(splitmix64(0n)).toBe(0xe220a8397b1dcdafn);
    expect(splitmix64(0x9e3779b97f4a7c15n)).toBe(0x6e789e6aa1b965f4n);
  });

  it("pins Flash-Next's multipliers, head sizes and table rows to model.md's check values", () => {
    const t = pleTables(flash, 1);
    expect(t.multipliers).toEqual([23703573157769n, 20109073645365n, 8052911324071n]);
    expect(t.vocabSizes.length).toBe(HEADS);
    expect(t.vocabSizes[0]).toBe(20000003);
    expect(t.vocabSizes[1]).toBe(20000023);
    expect(t.vocabSizes[15]).toBe(20000171);
    expect(t.totalRows).toBe(320_001_446);
    expect(t.paddedRows).toBe(320_001_536);
    expect(t.headDim).toBe(160);
    // offsets are the running sums of the sizes
    expect(t.offsets[0]).toBe(0);
    expect(t.offsets[15] + t.vocabSizes[15]).toBe(t.totalRows);
  });

  it('a second PLE layer seeds with seed + 10007 and takes the next 16 primes', () => {
    // expected: a plain-int Python derivation (HF's _build_layer_multipliers and
    // _find_nth_prime_after with ple_layer_index 1), run once
    const two: ModelConfig = { ...flash, ple: { ...flash.ple, layerIds: [1, 5] } };
    const t = pleTables(two, 5);
    expect(t.multipliers).toEqual([3352040966061n, 19752442147475n, 10742103100073n]);
    expect(t.vocabSizes[0]).toBe(20000213);
    expect(t.vocabSizes[15]).toBe(20000429);
    expect(t.totalRows).toBe(320_005_046);
    expect(t.paddedRows).toBe(320_005_120);
    expect(() => pleTables(two, 2)).toThrow(/layer 2 carries no PLE/);
  });

  it('multipliers are odd and small enough that id * m < 2^63 for every id of the vocabulary', () => {
    for (const c of [flash, getConfig('small'), tiny]) {
      for (const m of pleLayerMultipliers(c.ple.seed, c.vocabSize, c.ple.ngramSize, 0)) {
        expect(m & 1n).toBe(1n);
        expect(BigInt(c.vocabSize - 1) * m < 1n << 63n).toBe(true);
      }
    }
  });

  it('small presets keep 16 prime heads from a small base, padded to 128 rows', () => {
    expect(pleTables(tiny, 1).vocabSizes).toEqual([101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179]);
    expect(pleTables(tiny, 1).paddedRows).toBe(2304);
    expect(pleTables(getConfig('small'), 1).paddedRows).toBe(16896);
  });
});

describe('PLE n-gram ids', () => {
  const p = params(flash, 1);
  const EOS = flash.eosTokenId;

  it('gives the reference ids, offsets included, on a sequence with EOS resets', () => {
    // Expected: a plain-int Python script run once, written after ATOM's _ngram_ids_kernel
    // (a "live" flag per shift) with Flash-Next's constants, and cross-checked on 300 random
    // sequences against HF's _shift_right_ignore_eos formulation.
    const tokens = Int32Array.from([9707, 11, EOS, 1879, EOS, EOS, 3, 9707]);
    const expected = [
      // t0 9707: context EOS, EOS
      [
        16410909, 39682429, 55103279, 60931720, 87006904, 116506179, 131512017, 152932897, 169641436, 182022480, 209277433, 237891023, 256841529, 277007269,
        290665954, 300984276,
      ],
      // t1 11: 9707, then EOS (before the start)
      [
        18158303, 36390029, 45652312, 70783524, 98191154, 114024957, 127804916, 159566246, 175132467, 192583600, 217919476, 237199054, 259336807, 261799367,
        289359313, 307699687,
      ],
      // t2 EOS: still sees 11, 9707 (the current token is never replaced)
      [
        4679147, 20352667, 52599150, 74683044, 98198172, 106977280, 121027876, 141408284, 179487506, 195941560, 207086481, 221700584, 240897753, 261139696,
        294786063, 304757900,
      ],
      // t3 1879: EOS, then EOS (reset: 11 is behind the EOS)
      [
        4534223, 34461195, 53188831, 67623329, 89624755, 104428266, 137386396, 149402401, 160426620, 196479308, 211378993, 239143795, 249988146, 262053263,
        299679851, 309845962,
      ],
      // t4 EOS: 1879, EOS
      [
        18827606, 27700912, 56521518, 65780303, 81132822, 100518937, 120474864, 142052741, 160378389, 194054763, 218238635, 233524066, 240528344, 268500983,
        298040515, 307350728,
      ],
      // t5 EOS: EOS, EOS (1879 is behind the EOS at t4)
      [
        9663979, 26558231, 56120240, 74755659, 80459717, 109265651, 132697467, 151022725, 170054832, 192967038, 200687722, 225763581, 259275737, 272983544,
        297596484, 300986548,
      ],
      // t6 3: EOS, EOS
      [
        5318554, 26730617, 51177670, 61593418, 94411889, 119482836, 127837362, 140373362, 175277381, 199452204, 217186100, 238911097, 253868456, 270051525,
        282384981, 306094789,
      ],
      // t7 9707: 3, EOS
      [
        10917262, 30341611, 50226337, 62258169, 98464962, 110570705, 138763863, 143085708, 165396992, 194502361, 206734063, 231228796, 259123089, 267335469,
        290143808, 304715098,
      ],
    ];
    expect(Array.from(pleNgramIds(tokens, p))).toEqual(expected.flat());
  });

  it('continues a sequence from its context (the tokens before the chunk, oldest first)', () => {
    // same Python script, context (EOS, 11) before [3, 9707]
    const ids = pleNgramIds(Int32Array.from([3, 9707]), p, Int32Array.from([EOS, 11]));
    expect(Array.from(ids)).toEqual(
      [
        [
          298497, 29103624, 53506329, 67670223, 96953733, 106714931, 121356752, 140879228, 162290619, 196199869, 210911714, 226589581, 247319736, 268409465,
          288852720, 311667641,
        ],
        // t1 9707 after 3, 11: the bigram heads equal t7 above (3 before it), the trigram heads differ (11, not EOS)
        [
          10917262, 30341611, 50226337, 62258169, 98464962, 110570705, 138763863, 143085708, 177434156, 186148160, 216523891, 227410384, 252202221, 277035464,
          298655853, 306825993,
        ],
      ].flat(),
    );
    // a chunked sequence gives the same ids as the whole one
    const whole = Int32Array.from([5, 900, 17, 4, 77]);
    const tail = pleNgramIds(whole.subarray(3), p, whole.slice(1, 3));
    expect(tail).toEqual(pleNgramIds(whole, p).subarray(3 * HEADS));
  });

  it("keeps every id inside its head's range [offset, offset + size)", () => {
    const t = params(tiny, 1);
    const rng = new Rng(1);
    const tokens = Int32Array.from({ length: 200 }, () => rng.int(0, tiny.vocabSize));
    const ids = pleNgramIds(tokens, t);
    const outside = Array.from(ids).filter((id, i) => !(id >= t.offsets[i % HEADS] && id < t.offsets[i % HEADS] + t.vocabSizes[i % HEADS]));
    expect(outside).toEqual([]);
    expect(new Set(Array.from(ids).filter((_, i) => i % HEADS === 0)).size).toBeGreaterThan(50);
  });

  it('resets the history at EOS: the next document hashes as at the start of a sequence', () => {
    const t = params(tiny, 1);
    const E = tiny.eosTokenId;
    const doc = [17, 250, 3, 99];
    const alone = pleNgramIds(Int32Array.from(doc), t);
    const packed = pleNgramIds(Int32Array.from([8, 400, 23, E, ...doc]), t);
    expect(packed.subarray(4 * HEADS)).toEqual(alone);
    // the EOS token itself still sees the document it ends
    expect(packed.subarray(3 * HEADS, 4 * HEADS)).not.toEqual(pleNgramIds(Int32Array.from([E]), t));
    // without the EOS the history crosses over, for the first two tokens only (ngramSize 3)
    const unpacked = pleNgramIds(Int32Array.from([8, 400, 23, 5, ...doc]), t);
    expect(unpacked.subarray(4 * HEADS, 6 * HEADS)).not.toEqual(alone.subarray(0, 2 * HEADS));
    expect(unpacked.subarray(6 * HEADS)).toEqual(alone.subarray(2 * HEADS));
  });

  it('rejects a token id outside the vocabulary, naming it and its position', () => {
    const t = params(tiny, 1);
    expect(() => pleNgramIds(Int32Array.from([1, 512]), t)).toThrow(/token id 512 at position 1 is outside the vocabulary \[0, 512\)/);
    expect(() => pleNgramIds(Int32Array.from([-1]), t)).toThrow(/token id -1 at position 0/);
    expect(() => pleNgramIds(Int32Array.from([1]), t, Int32Array.from([1]))).toThrow(/context has 1 tokens/);
  });
});
