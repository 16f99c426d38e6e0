import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TINY } from '../config/presets.ts';
import { bf16ToF32, f32ToBf16 } from '../numerics/bf16.ts';
import { fp8ToF32 } from '../numerics/fp8.ts';
import { numel } from '../tensor/tensor.ts';
import { openCheckpoint } from './hfCheckpoint.ts';
import { type RawEntry, writeRawSafetensors } from '../../../../test/support/rawSafetensors.ts';
import type { WeightSpec } from './weightSpec.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-fp8pc-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;

/** A model folder holding one .safetensors file written from the format, byte by byte. */
function folderWith(entries: RawEntry[]): string {
  const d = join(root, `m${folders++}`);
  mkdirSync(d);
  writeRawSafetensors(join(d, 'model.safetensors'), entries);
  return d;
}

const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const f32Raw = (name: string, shape: number[], values: number[]): RawEntry => ({ name, dtype: 'F32', shape, bytes: bytes(Float32Array.from(values)) });
const spec = (name: string, shape: number[]): WeightSpec => ({ name, shape, dtype: 'bf16', init: { kind: 'constant', value: 0 } });

const N = 5;
const K = 7;
const W = 'model.layers.0.mlp.shared_expert.up_proj.weight';
// every bit pattern but the NaNs (0x7f, 0xff) somewhere in the matrix
const qBits = Uint8Array.from({ length: N * K }, (_, i) => {
  const b = (i * 37 + 11) & 0xff;
  return (b & 0x7f) === 0x7f ? 0x3c : b;
});
// scales where fl(q * s) and bf(q * bf(s)) (the global-scale rule) give other bits
const scales = [0.0123456789, 1 / 3, 3.14159, 1e-3, 7.77];
const fp8 = (name = W, shape = [N, K], data = qBits): RawEntry => ({ name, dtype: 'F8_E4M3', shape, bytes: data });

function expected(rows: number[], cols: number[]): Uint16Array {
  const out: number[] = [];
  for (const r of rows) for (const c of cols) out.push(f32ToBf16(Math.fround(fp8ToF32(qBits[r * K + c], 'e4m3fn') * Math.fround(scales[r]))));
  return Uint16Array.from(out);
}

function openError(entries: RawEntry[], specs: WeightSpec[]): string {
  try {
    openCheckpoint(folderWith(entries), TINY, { specs }).source.close();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('openCheckpoint did not throw');
}

describe('per-channel FP8 weight scales (the PTPC-FP8 release)', () => {
  for (const scaleShape of [[N, 1], [N]]) {
    it(`dequantizes F8_E4M3 with F32${JSON.stringify(scaleShape)} scales as bf(fl(q * s[o])), whole and sliced`, async () => {
      const c = openCheckpoint(folderWith([fp8(), f32Raw(`${W.replace(/\.weight$/, '')}.weight_scale`, scaleShape, scales)]), TINY, {
        specs: [spec(W, [N, K])],
      });
      try {
        expect(c.conversions).toEqual(['1 FP8 tensors with per-channel scales dequantized to bf16 as bf(fl(q * s[o]))']);
        expect(c.unused).toEqual([]);
        const all = [0, 1, 2, 3, 4];
        const cols = [0, 1, 2, 3, 4, 5, 6];
        const whole = await c.source.read(W);
        expect(whole.dtype).toBe('bf16');
        expect(whole.shape).toEqual([N, K]);
        expect(whole.data).toEqual(expected(all, cols));
        const rows = await c.source.read(W, {
          axis: 0,
          ranges: [
            [1, 2],
            [3, 5],
          ],
        });
        expect(rows.data).toEqual(expected([1, 3, 4], cols));
        const colSlice = await c.source.read(W, { axis: 1, ranges: [[2, 5]] });
        expect(colSlice.data).toEqual(expected(all, [2, 3, 4]));
        // the stored form served for the FP8 GEMM: the bytes as stored (a plain file read) and the scales as F32 [N]
        const parts = c.source.fp8PerChannel(W)!;
        expect(parts.format).toBe('e4m3fn');
        const q = await c.source.read(parts.q, { axis: 0, ranges: [[1, 3]] });
        expect([q.dtype, q.shape, [...(q.data as Uint8Array)]]).toEqual(['fp8e4m3fn', [2, K], [...qBits.subarray(K, 3 * K)]]);
        expect(c.source.filePlan(parts.q)).not.toBeNull();
        const sc = await c.source.read(parts.scale, {
          axis: 0,
          ranges: [
            [1, 2],
            [4, 5],
          ],
        });
        expect([sc.dtype, sc.shape, [...(sc.data as Float32Array)]]).toEqual(['f32', [2], [Math.fround(scales[1]), Math.fround(scales[4])]]);
        expect(c.source.fp8PerChannel('model.layers.0.mlp.shared_expert.down_proj.weight')).toBeNull();
        // as e4m3fnuz (ATOM normalize_e4m3fn_to_e4m3fnuz): the same bits but -0 -> 0, the scales doubled; every value the same
        const fnuz = c.source.fp8PerChannel(W, 'e4m3fnuz')!;
        expect(fnuz.format).toBe('e4m3fnuz');
        const qz = await c.source.read(fnuz.q);
        const sz = (await c.source.read(fnuz.scale)).data as Float32Array;
        expect(qz.dtype).toBe('fp8e4m3fnuz');
        expect([...(qz.data as Uint8Array)]).toEqual([...qBits].map((b) => (b === 0x80 ? 0 : b)));
        expect(qBits.includes(0x80)).toBe(true);
        expect([...sz]).toEqual(scales.map((v) => Math.fround(v) * 2));
        // (+0 for -0: the one change)
        for (let i = 0; i < N * K; i++)
          expect(fp8ToF32(qz.data[i], 'e4m3fnuz') * sz[Math.floor(i / K)]).toBe(fp8ToF32(qBits[i], 'e4m3fn') * Math.fround(scales[Math.floor(i / K)]) + 0);
        expect(c.source.fp8PerChannel(W, 'e4m3fn')).toEqual(parts);
        // the global-scale rule, bf(q * bf(s)), gives other bits for these scales
        const global = Uint16Array.from(
          all.flatMap((r) => cols.map((k) => f32ToBf16(Math.fround(fp8ToF32(qBits[r * K + k], 'e4m3fn') * bf16ToF32(f32ToBf16(scales[r])))))),
        );
        expect(whole.data).not.toEqual(global);
      } finally {
        c.source.close();
      }
    });
  }

  it('a one-row weight: [1, 1] is its channel scale, [1] stays the global form', async () => {
    const one = fp8(W, [1, K], qBits.subarray(0, K));
    const scale = `${W.replace(/\.weight$/, '')}.weight_scale`;
    const c = openCheckpoint(folderWith([one, f32Raw(scale, [1, 1], [scales[0]])]), TINY, { specs: [spec(W, [1, K])] });
    expect((await c.source.read(W)).data).toEqual(expected([0], [0, 1, 2, 3, 4, 5, 6]));
    expect(c.conversions[0]).toMatch(/per-channel/);
    c.source.close();
    const g = openCheckpoint(folderWith([one, f32Raw(scale, [1], [scales[0]])]), TINY, { specs: [spec(W, [1, K])] });
    expect(g.conversions[0]).toMatch(/a global scale/);
    g.source.close();
  });

  it('a misshapen or non-F32 scale is one error naming the scale tensor and its file', () => {
    const s = `${W.replace(/\.weight$/, '')}.weight_scale`;
    const specs = [spec(W, [N, K])];
    expect(openError([fp8(), f32Raw(s, [1, N], scales)], specs)).toMatch(
      new RegExp(
        `1 problem: .*m\\d+/model\\.safetensors: tensor '${s.replace(/\./g, '\\.')}': per-channel scales of F8_E4M3\\[5,7\\] must be F32\\[5,1\\] \\(or F32\\[5\\]\\), got F32\\[1,5\\]`,
      ),
    );
    expect(openError([fp8(), { name: s, dtype: 'BF16', shape: [N, 1], bytes: bytes(new Uint16Array(N)) }], specs)).toMatch(
      /tensor '.*\.weight_scale': per-channel scales of F8_E4M3\[5,7\] must be F32\[5,1\] \(or F32\[5\]\), got BF16\[5,1\]/,
    );
    expect(openError([fp8(), f32Raw(s, [N, 2], [...scales, ...scales])], specs)).toMatch(
      /tensor '.*\.weight_scale': a global FP8 scale must be one F32 or BF16 value, got F32\[5,2\]; per-channel scales of F8_E4M3\[5,7\] are F32\[5,1\]/,
    );
    expect(openError([fp8()], specs)).toMatch(/tensor 'model\.layers\.0\.mlp\.shared_expert\.up_proj\.weight': F8_E4M3 has no scale tensor/);
  });

  for (const [what, bad] of [
    ['NaN', NaN],
    ['+inf', Infinity],
    ['0', 0],
    ['a negative', -0.5],
  ] as const) {
    it(`${what} scale: refused when read, naming the scale tensor, row and file`, async () => {
      const s = `${W.replace(/\.weight$/, '')}.weight_scale`;
      const c = openCheckpoint(folderWith([fp8(), f32Raw(s, [N, 1], [1, 1, 1, bad, 1])]), TINY, { specs: [spec(W, [N, K])] });
      await expect(c.source.read(W)).rejects.toThrow(
        new RegExp(
          `model\\.safetensors: tensor '${s.replace(/\./g, '\\.')}' holds ${String(bad).replace('+', '')} at row 3: per-channel FP8 scales must be finite and > 0`,
        ),
      );
      // a slice not covering the row is refused as well: the scale tensor is bad as a whole
      await expect(c.source.read(W, { axis: 0, ranges: [[0, 1]] })).rejects.toThrow(/at row 3/);
      // and so are the scales served for the FP8 GEMM (keepFp8Weights)
      await expect(c.source.read(c.source.fp8PerChannel(W)!.scale, { axis: 0, ranges: [[0, 1]] })).rejects.toThrow(
        /at row 3: per-channel FP8 scales must be finite and > 0/,
      );
      c.source.close();
    });
  }

  it('FP8 where the reference keeps bf16 (router, shared-expert gate, GDN input projections, indexer, HC, norms) is refused, naming each tensor', () => {
    const names = [
      ['model.layers.0.mlp.gate.weight', [8, 32]],
      ['model.layers.0.mlp.shared_expert_gate.weight', [1, 32]],
      ['model.layers.0.linear_attn.in_proj_qkv.weight', [160, 32]],
      ['model.layers.3.self_attn.indexer.index_qk_proj.weight', [40, 32]],
      ['model.layers.0.attn_hyper_connection.input_mix_weight_up.weight', [128, 4]],
      ['model.embed_tokens.weight', [512, 32]],
      ['lm_head.weight', [512, 32]],
      ['model.layers.0.linear_attn.norm.weight', [8, 1]],
    ] as const;
    const entries = names.flatMap(([n, shape]) => [
      fp8(n, [...shape], new Uint8Array(numel(shape))),
      f32Raw(`${n.replace(/\.weight$/, '')}.weight_scale`, [shape[0], 1], Array(shape[0]).fill(1)),
    ]);
    const m = openError(
      entries,
      names.map(([n, shape]) => spec(n, [...shape])),
    );
    expect(m).toMatch(/^checkpoint: 8 problems: /);
    for (const [n] of names) expect(m).toContain(`tensor '${n}': F8_E4M3 where the model reads bf16`);
  });

  it('FP8 where FP8 may stand (experts, shared expert, attention, GDN out_proj, PLE projections) is read', async () => {
    const names = [
      'model.layers.0.linear_attn.out_proj.weight',
      'model.layers.3.self_attn.q_proj.weight',
      'model.layers.1.ple.value_proj.weight',
      'mtp.layers.0.self_attn.o_proj.weight',
    ];
    const entries = names.flatMap((n) => [fp8(n), f32Raw(`${n.replace(/\.weight$/, '')}.weight_scale`, [N, 1], scales)]);
    const c = openCheckpoint(folderWith(entries), TINY, { specs: names.map((n) => spec(n, [N, K])) });
    for (const n of names) expect((await c.source.read(n)).data).toEqual(expected([0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6]));
    expect(c.conversions).toEqual(['4 FP8 tensors with per-channel scales dequantized to bf16 as bf(fl(q * s[o]))']);
    c.source.close();
  });

  it("a BF16 global table scale (the Qwen/Qwen3.8-Flash-Next-FP8 release's) reads as bf(q * s), s exact in bf16", async () => {
    const t = 'model.layers.1.ple.ple_embedding.ngram_embedding';
    // s = bf16 0x3c23 (0.00994873046875), q = 0x41 (2.25): 2.25 * s is exact in fp32, then rounded to bf16 once
    const s = 0x3c23;
    const c = openCheckpoint(
      folderWith([
        fp8(`${t}.shard_0.weight`, [1, 2], Uint8Array.of(0x41, 0xc1)),
        { name: `${t}.weight_scale`, dtype: 'BF16', shape: [1], bytes: bytes(Uint16Array.of(s)) },
      ]),
      TINY,
      { specs: [spec(`${t}.shard_0.weight`, [1, 2])] },
    );
    const v = f32ToBf16(Math.fround(2.25 * bf16ToF32(s)));
    expect([...((await c.source.read(`${t}.shard_0.weight`)).data as Uint16Array)]).toEqual([v, v | 0x8000]);
    expect(c.conversions).toEqual(['1 FP8 tensors with a global scale dequantized to bf16 as bf(q * bf(s))']);
    c.source.close();
    expect(
      openError(
        [fp8(`${t}.shard_0.weight`, [1, 2], Uint8Array.of(0x41, 0xc1)), { name: `${t}.weight_scale`, dtype: 'F16', shape: [1], bytes: new Uint8Array(2) }],
        [spec(`${t}.shard_0.weight`, [1, 2])],
      ),
    ).toMatch(/tensor '.*ngram_embedding\.weight_scale': a global FP8 scale must be one F32 or BF16 value, got F16\[1\]/);
  });
});
