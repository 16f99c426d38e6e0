import { spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hfTextConfigJson } from '../config/hfConfig.ts';
import { SMALL, TINY } from '../config/presets.ts';
import type { WeightRef, WeightSlice } from '../graph/graph.ts';
import { writeSafetensorsFile } from '../io/safetensorsFile.ts';
import { type RawEntry, writeRawSafetensors } from '../../../../test/support/rawSafetensors.ts';
import { moeRankWeights } from '../layers/moe/moeWeights.ts';
import { pleBuffers } from '../layers/ple/pleWeights.ts';
import { numel, type Tensor } from '../tensor/tensor.ts';
import { type CheckpointProblem, formatCheckpointProblem } from './checkpointProblem.ts';
import { CheckpointProblemsError, openCheckpoint, unusedTensorsWarning } from './hfCheckpoint.ts';
import { planWeightRead, resolveWeight } from './resolveWeight.ts';
import { SafetensorsWeightSource } from './safetensorsWeights.ts';
import { SyntheticWeightSource } from './syntheticWeights.ts';
import type { FileRun } from './weightSource.ts';
import type { WeightSpec } from './weightSpec.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-hfckpt-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
/** A fresh model folder per case (a folder's config.json is part of the checkpoint). */
function folder(): string {
  const d = join(root, `m${folders++}`);
  mkdirSync(d);
  return d;
}

const bytes = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const bf16Raw = (name: string, shape: number[], f: (i: number) => number): RawEntry => ({
  name,
  dtype: 'BF16',
  shape,
  bytes: bytes(Uint16Array.from({ length: numel(shape) }, (_, i) => f(i))),
});
const f32Raw = (name: string, shape: number[], values: number[]): RawEntry => ({ name, dtype: 'F32', shape, bytes: bytes(Float32Array.from(values)) });
const spec = (name: string, shape: number[], dtype: 'bf16' | 'f32' = 'bf16'): WeightSpec => ({ name, shape, dtype, init: { kind: 'constant', value: 0 } });
const bf16 = (shape: number[], data: Uint16Array): Tensor => ({ dtype: 'bf16', shape, data });

// tiny: H 32, 8 experts of intermediate 16
const H = TINY.hiddenSize;
const I = TINY.moe.intermediate;
const E = TINY.moe.numExperts;
const P = 'model.layers.0.mlp.experts';
const STACKED = [spec(`${P}.gate_up_proj`, [E, 2 * I, H]), spec(`${P}.down_proj`, [E, H, I])];
// expert e's tensor k holds bits (e * 8 + k) * 4096 + i: every element says where it came from
const partBits = (e: number, k: number) => (i: number) => ((e * 8 + k) * 4096 + i) & 0xffff;

/** Every expert's three tensors; `multimodal` names them model.language_model.* as the release does. */
function perExpertFile(path: string, multimodal = false, skip?: string): void {
  const prefix = multimodal ? P.replace(/^model\./, 'model.language_model.') : P;
  const entries: RawEntry[] = [];
  for (let e = 0; e < E; e++) {
    for (const [k, part, shape] of [
      [0, 'gate_proj', [I, H]],
      [1, 'up_proj', [I, H]],
      [2, 'down_proj', [H, I]],
    ] as const) {
      const name = `${prefix}.${e}.${part}.weight`;
      if (name !== skip) entries.push(bf16Raw(name, [...shape], partBits(e, k)));
    }
  }
  writeRawSafetensors(path, entries);
}

describe('openCheckpoint: layouts', () => {
  it('finds the shards of a folder: the index, model.safetensors, or every *.safetensors', async () => {
    const a = folder();
    writeSafetensorsFile(join(a, 'model-00001-of-00002.safetensors'), { x: bf16([2], Uint16Array.of(1, 2)) });
    writeSafetensorsFile(join(a, 'model-00002-of-00002.safetensors'), { y: bf16([1], Uint16Array.of(3)) });
    const specs = [spec('x', [2]), spec('y', [1])];
    const shards = openCheckpoint(a, TINY, { specs });
    expect(shards.files.map((f) => f.slice(a.length + 1))).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect((await shards.source.read('y')).data).toEqual(Uint16Array.of(3));
    shards.source.close();
    writeFileSync(
      join(a, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { x: 'model-00001-of-00002.safetensors', y: 'model-00002-of-00002.safetensors' } }),
    );
    const indexed = openCheckpoint(a, TINY, { specs });
    expect(indexed.files).toHaveLength(2);
    indexed.source.close();
    openCheckpoint(join(a, 'model.safetensors.index.json'), TINY, { specs }).source.close();
    openCheckpoint(join(a, 'model-00001-of-00002.safetensors'), TINY, { specs: [spec('x', [2])] }).source.close();
    const b = folder();
    writeSafetensorsFile(join(b, 'model.safetensors'), { x: bf16([2], Uint16Array.of(1, 2)) });
    const single = openCheckpoint(b, TINY, { specs: [spec('x', [2])] });
    expect(single.files).toEqual([join(b, 'model.safetensors')]);
    single.source.close();
  });

  it('reads model.language_model.* as model.*, and lists what the model does not read', async () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [
      bf16Raw('model.language_model.embed_tokens.weight', [2, 2], (i) => 0x3f80 + i),
      bf16Raw('model.visual.blocks.0.attn.qkv.weight', [2], () => 0),
      bf16Raw('mtp.fc_hidden.weight', [2, 2], () => 0),
      bf16Raw('lm_head.weight', [2, 2], () => 0),
      { name: 'model.language_model.layers.0.mlp.experts.0.gate_proj.input_scale', dtype: 'F32', shape: [1], bytes: bytes(Float32Array.of(1)) },
    ]);
    const c = openCheckpoint(d, TINY, { specs: [spec('model.embed_tokens.weight', [2, 2])] });
    expect((await c.source.read('model.embed_tokens.weight')).data).toEqual(Uint16Array.of(0x3f80, 0x3f81, 0x3f82, 0x3f83));
    expect(c.unused).toEqual([
      'lm_head.weight',
      'model.language_model.layers.0.mlp.experts.0.gate_proj.input_scale',
      'model.visual.blocks.0.attn.qkv.weight',
      'mtp.fc_hidden.weight',
    ]);
    expect(unusedTensorsWarning(c.unused)).toBe(
      '4 checkpoint tensors are not used by the model: lm_head.weight, model.language_model.layers.0.mlp.experts.0.gate_proj.input_scale, model.visual.blocks.0.attn.qkv.weight, mtp.fc_hidden.weight',
    );
    expect(unusedTensorsWarning([])).toBeNull();
    expect(unusedTensorsWarning(Array.from({ length: 10 }, (_, i) => `t${i}`))).toMatch(/10 checkpoint tensors .*t7, and 2 more$/);
    c.source.close();
  });

  it('serves per-expert tensors as the stacked HF tensors; a slice reads only what it covers', async () => {
    const d = folder();
    perExpertFile(join(d, 'model.safetensors'), true);
    const c = openCheckpoint(d, TINY, { specs: STACKED });
    const s = c.source;
    expect(s.info(`${P}.gate_up_proj`)).toEqual({ shape: [E, 2 * I, H], dtype: 'bf16' });
    const want = (e: number, k: number, rows: [number, number], cols: [number, number]) => {
      const w = k === 2 ? I : H;
      const out: number[] = [];
      for (let r = rows[0]; r < rows[1]; r++) for (let col = cols[0]; col < cols[1]; col++) out.push(partBits(e, k)(r * w + col));
      return out;
    };
    // experts 2..3: each expert's gate rows, then its up rows
    const before = s.bytesRead();
    const two = await s.read(`${P}.gate_up_proj`, { axis: 0, ranges: [[2, 4]] });
    expect(two.shape).toEqual([2, 2 * I, H]);
    expect([...(two.data as Uint16Array)]).toEqual([
      ...want(2, 0, [0, I], [0, H]),
      ...want(2, 1, [0, I], [0, H]),
      ...want(3, 0, [0, I], [0, H]),
      ...want(3, 1, [0, I], [0, H]),
    ]);
    expect(s.bytesRead() - before).toBe(2 * 2 * I * H * 2);
    // rows 8..23 of every expert: gate rows 8..15 then up rows 0..7
    const mid = await s.read(`${P}.gate_up_proj`, { axis: 1, ranges: [[8, 24]] });
    expect(mid.shape).toEqual([E, 16, H]);
    expect([...(mid.data as Uint16Array).subarray(0, 16 * H)]).toEqual([...want(0, 0, [8, 16], [0, H]), ...want(0, 1, [0, 8], [0, H])]);
    // columns 4..5 of down_proj
    const cols = await s.read(`${P}.down_proj`, { axis: 2, ranges: [[4, 6]] });
    expect(cols.shape).toEqual([E, H, 2]);
    expect([...(cols.data as Uint16Array).subarray(H * 2 * 7)]).toEqual(want(7, 2, [0, H], [4, 6]));
    // a rank of tp 4 through its graph weight ref: experts 2..3 as [2 * 2I, H]
    const at = s.bytesRead();
    const ref = moeRankWeights(TINY, 0, 1, 4).expertsGateUp;
    const t = await resolveWeight(s, ref);
    expect(t.shape).toEqual([2 * 2 * I, H]);
    expect(t.data).toEqual(two.data);
    expect(s.bytesRead() - at).toBe(2 * 2 * I * H * 2);
    expect(c.unused).toEqual([]);
    s.close();
  });

  it('a rank of tp 4 reads only its quarter of a stacked expert tensor', async () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [bf16Raw(`${P}.gate_up_proj`, [E, 2 * I, H], (i) => i), bf16Raw(`${P}.down_proj`, [E, H, I], (i) => i)]);
    const c = openCheckpoint(d, TINY, { specs: STACKED });
    for (let rank = 0; rank < 4; rank++) {
      const w = moeRankWeights(TINY, 0, rank, 4);
      const before = c.source.bytesRead();
      const gu = await resolveWeight(c.source, w.expertsGateUp);
      const dn = await resolveWeight(c.source, w.expertsDown);
      // 2 of 8 experts, bf16: 2 * (2I * H + H * I) * 2 bytes of the file's 8 * 3072 * 2
      expect(c.source.bytesRead() - before).toBe(2 * (2 * I * H + H * I) * 2);
      expect((gu.data as Uint16Array)[0]).toBe((rank * 2 * 2 * I * H) & 0xffff);
      expect(dn.shape).toEqual([2 * H, I]);
    }
    c.source.close();
  });
});

describe('openCheckpoint: dtypes and FP8', () => {
  it('dequantizes 128x128 block FP8 as bf(fl(q * s)): the fp32 product rounds first', async () => {
    const d = folder();
    // [200, 300] in 2 x 3 blocks; q = 1.125 (e4m3fn 0x39) everywhere but (130, 260) = 2.25 (0x41)
    const q = new Uint8Array(200 * 300).fill(0x39);
    q[130 * 300 + 260] = 0x41;
    // block (0, 0) scale 0x3f6471c8: 1.125 * s = 1 + 2^-8 + 2^-24 exactly, whose fp32 rounding
    // (a tie, to even) is 1 + 2^-8, a bf16 tie that goes to even: 1.0 (0x3f80), while the
    // exact product would round up to 0x3f81. Block (1, 2) scale fround(0.1): 2.25 * s rounds
    // to 0.225000 in fp32 and to 0x3e66 in bf16. The other blocks: 2^k, exact.
    const s = new Float32Array([new Float32Array(new Uint32Array([0x3f6471c8]).buffer)[0], 0.5, 0.25, 2, 4, 0.1]);
    writeRawSafetensors(join(d, 'model.safetensors'), [
      { name: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F8_E4M3', shape: [200, 300], bytes: q },
      { name: 'model.layers.0.self_attn.q_proj.weight_scale_inv', dtype: 'F32', shape: [2, 3], bytes: bytes(s) },
    ]);
    const c = openCheckpoint(d, TINY, { specs: [spec('model.layers.0.self_attn.q_proj.weight', [200, 300])] });
    expect(c.conversions).toEqual(['1 FP8 tensors with 128x128 block scales dequantized to bf16 as bf(fl(q * s))']);
    const w = (await c.source.read('model.layers.0.self_attn.q_proj.weight')).data as Uint16Array;
    expect(w[0]).toBe(0x3f80);
    expect(w[127 * 300 + 127]).toBe(0x3f80);
    expect(w[0 * 300 + 128]).toBe(0x3f10); // 1.125 * 0.5 = 0.5625
    expect(w[0 * 300 + 256]).toBe(0x3e90); // 1.125 * 0.25 = 0.28125
    expect(w[128 * 300 + 0]).toBe(0x4010); // 1.125 * 2
    expect(w[199 * 300 + 200]).toBe(0x4090); // 1.125 * 4
    expect(w[130 * 300 + 260]).toBe(0x3e66);
    // rows 126..129 (across the block edge) and columns 255..257 read the same values
    const rows = (await c.source.read('model.layers.0.self_attn.q_proj.weight', { axis: 0, ranges: [[126, 131]] })).data as Uint16Array;
    expect(rows).toEqual(w.subarray(126 * 300, 131 * 300));
    const cols = (await c.source.read('model.layers.0.self_attn.q_proj.weight', { axis: 1, ranges: [[255, 258]] })).data as Uint16Array;
    expect([...cols.subarray(130 * 3, 131 * 3)]).toEqual([w[130 * 300 + 255], w[130 * 300 + 256], w[130 * 300 + 257]]);
    c.source.close();
  });

  it('dequantizes the PLE table with its one global scale as bf(q * bf(s)), e4m3fn and e4m3fnuz', async () => {
    const d = folder();
    const t = 'model.layers.1.ple.ple_embedding.ngram_embedding';
    // q = 2.25 (0x41 in e4m3fn), s = fround(0.1) -> bf(s) = 0.10009765625: 2.25 * bf(s) =
    // 0.2252197265625 exactly, bf16 0x3e67 (with the fp32 scale it would be 0x3e66)
    writeRawSafetensors(join(d, 'model.safetensors'), [
      { name: `${t}.shard_0.weight`, dtype: 'F8_E4M3', shape: [2, 2], bytes: Uint8Array.of(0x41, 0xc1, 0x00, 0x38) },
      { name: `${t}.shard_1.weight`, dtype: 'F8_E4M3', shape: [1, 2], bytes: Uint8Array.of(0x41, 0x41) },
      f32Raw(`${t}.weight_scale`, [1], [0.1]),
      { name: 'fnuz.weight', dtype: 'F8_E4M3FNUZ', shape: [2], bytes: Uint8Array.of(0x41, 0x80) },
      f32Raw('fnuz.weight_scale', [1], [1]),
    ]);
    const c = openCheckpoint(d, TINY, { specs: [spec(`${t}.shard_0.weight`, [2, 2]), spec(`${t}.shard_1.weight`, [1, 2]), spec('fnuz.weight', [2])] });
    expect([...((await c.source.read(`${t}.shard_0.weight`)).data as Uint16Array)]).toEqual([0x3e67, 0xbe67, 0x0000, 0x3dcd]);
    expect([...((await c.source.read(`${t}.shard_1.weight`, { axis: 1, ranges: [[1, 2]] })).data as Uint16Array)]).toEqual([0x3e67]);
    // e4m3fnuz 0x41 is 1.125 (bias 8), 0x80 its NaN
    expect([...((await c.source.read('fnuz.weight')).data as Uint16Array)]).toEqual([0x3f90, 0x7fc0]);
    expect(c.unused).toEqual([]);
    c.source.close();
  });

  it('reads fp32 tensors the model wants in bf16 rounded to nearest even, and bf16 as fp32 exactly', async () => {
    const d = folder();
    // 1 + 2^-8 is a bf16 tie (to even: 1.0); 1 + 2^-8 + 2^-20 rounds up to 1 + 2^-7
    writeRawSafetensors(join(d, 'model.safetensors'), [
      f32Raw('model.layers.0.linear_attn.A_log', [3], [1 + 2 ** -8, 1 + 2 ** -8 + 2 ** -20, -2.5]),
      bf16Raw('widen', [1], () => 0x3fc0),
    ]);
    const c = openCheckpoint(d, TINY, { specs: [spec('model.layers.0.linear_attn.A_log', [3]), spec('widen', [1], 'f32')] });
    expect([...((await c.source.read('model.layers.0.linear_attn.A_log')).data as Uint16Array)]).toEqual([0x3f80, 0x3f81, 0xc020]);
    expect(await c.source.read('widen')).toEqual({ dtype: 'f32', shape: [1], data: Float32Array.of(1.5) });
    expect(c.conversions).toEqual(['1 fp32 tensors read as bf16 (round to nearest even)']);
    c.source.close();
  });

  it('checks the PLE buffers against their derivation', () => {
    const bufs = pleBuffers(TINY, 1);
    const raw = bufs.map(
      (b): RawEntry => ({ name: `model.language_model.${b.name.slice('model.'.length)}`, dtype: 'I64', shape: b.shape, bytes: bytes(b.values) }),
    );
    const good = folder();
    writeRawSafetensors(join(good, 'model.safetensors'), raw);
    expect(openCheckpoint(good, TINY, { specs: [] }).unused).toEqual([]);
    const bad = folder();
    const wrong = BigInt64Array.from(bufs[1].values);
    wrong[3] += 1n;
    writeRawSafetensors(join(bad, 'model.safetensors'), [raw[0], { ...raw[1], bytes: bytes(wrong) }, raw[2]]);
    expect(() => openCheckpoint(bad, TINY, { specs: [] })).toThrow(
      /config\/checkpoint mismatch: .*tensor 'model.language_model.layers.1.ple.ple_embedding.ngram_heads_vocab_sizes' is \[101, 103, 107, 110, .*derives \[101, 103, 107, 109,/,
    );
  });
});

/** The one error openCheckpoint throws for a folder holding `entries`. */
function openError(entries: RawEntry[], specs: WeightSpec[], config = TINY): string {
  const d = folder();
  writeRawSafetensors(join(d, 'model.safetensors'), entries);
  try {
    openCheckpoint(d, config, { specs }).source.close();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('openCheckpoint did not throw');
}

describe('openCheckpoint: malformed checkpoints, one error naming tensor and file', () => {
  it('a missing tensor', () => {
    expect(openError([bf16Raw('a', [1], () => 0)], [spec('model.norm.weight', [1])])).toMatch(
      /checkpoint: 1 problem: missing tensor 'model.norm.weight' \(in .*m\d+\)/,
    );
  });
  it('a wrong shape or dtype', () => {
    const m = openError(
      [
        bf16Raw('a', [2, 3], () => 0),
        { name: 'b', dtype: 'I32', shape: [1], bytes: new Uint8Array(4) },
        { name: 'c', dtype: 'I64', shape: [1], bytes: new Uint8Array(8) },
      ],
      [spec('a', [3, 3]), spec('b', [1]), spec('c', [1])],
    );
    expect(m).toMatch(/3 problems: config\/checkpoint mismatch: .*m\d+\/model\.safetensors: tensor 'a' is \[2,3\], config 'tiny' needs \[3,3\]/);
    expect(m).toMatch(/tensor 'b': wrong dtype I32, the model reads it as bf16/);
    expect(m).toMatch(/tensor 'c': wrong dtype I64/);
  });
  it('the problems are records: kind, tensor, expected, found, read without parsing the message', () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [bf16Raw('a', [2, 3], () => 0), { name: 'b', dtype: 'I32', shape: [1], bytes: new Uint8Array(4) }]);
    let problems: readonly CheckpointProblem[] = [];
    try {
      openCheckpoint(d, TINY, { specs: [spec('a', [3, 3]), spec('b', [1]), spec('n', [1])] });
    } catch (e) {
      problems = e instanceof CheckpointProblemsError ? e.problems : [];
    }
    const file = join(d, 'model.safetensors');
    expect(problems.map(({ kind, tensor, file, expected, found }) => ({ kind, tensor, file, expected, found }))).toEqual([
      { kind: 'wrong shape', tensor: 'a', file, expected: '[3,3]', found: '[2,3]' },
      { kind: 'wrong dtype', tensor: 'b', file, expected: 'bf16', found: 'I32' },
      { kind: 'missing', tensor: 'n', file: undefined, expected: 'present', found: 'absent' },
    ]);
    expect(problems.map(formatCheckpointProblem)).toEqual([
      `config/checkpoint mismatch: ${file}: tensor 'a' is [2,3], config 'tiny' needs [3,3]`,
      `${file}: tensor 'b': wrong dtype I32, the model reads it as bf16`,
      `missing tensor 'n' (in ${d})`,
    ]);
  });
  it('FP8 without a scale, with a misshapen block scale, with a bad global scale', () => {
    const fp8 = { name: 'w.weight', dtype: 'F8_E4M3', shape: [200, 300], bytes: new Uint8Array(60000) } as RawEntry;
    expect(openError([fp8], [spec('w.weight', [200, 300])])).toMatch(
      /tensor 'w.weight': F8_E4M3 has no scale tensor \('w.weight_scale_inv' or '.weight_scale'\)/,
    );
    expect(openError([fp8, f32Raw('w.weight_scale_inv', [1, 3], [1, 1, 1])], [])).toMatch(
      /tensor 'w.weight_scale_inv': block scales of F8_E4M3\[200,300\] in 128x128 blocks must be F32\[2,3\], got F32\[1,3\]/,
    );
    expect(openError([fp8, f32Raw('w.weight_scale', [1], [0])], [])).toMatch(/tensor 'w.weight_scale': the FP8 scale 0 is not finite and positive/);
    expect(openError([fp8, f32Raw('w.weight_scale', [2], [1, 1])], [])).toMatch(/a global FP8 scale must be one F32 or BF16 value, got F32\[2\]/);
  });
  it('a NaN block scale, when the tensor is read', async () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [
      { name: 'w.weight', dtype: 'F8_E4M3', shape: [2, 2], bytes: new Uint8Array(4) },
      f32Raw('w.weight_scale_inv', [1, 1], [NaN]),
    ]);
    const c = openCheckpoint(d, TINY, { specs: [spec('w.weight', [2, 2])] });
    await expect(c.source.read('w.weight')).rejects.toThrow(
      /model\.safetensors: tensor 'w.weight_scale_inv' holds NaN at 0: block scales must be finite and >= 0/,
    );
    c.source.close();
  });
  it('an incomplete, oversized or doubled expert layout', () => {
    const d = folder();
    perExpertFile(join(d, 'model.safetensors'), false, `${P}.3.up_proj.weight`);
    expect(() => openCheckpoint(d, TINY, { specs: STACKED })).toThrow(
      /1 problem: missing tensor 'model.layers.0.mlp.experts.3.up_proj.weight' \(the per-expert layout of model.layers.0.mlp.experts in /,
    );
    const extra = [bf16Raw(`${P}.8.gate_proj.weight`, [I, H], () => 0)];
    const e2 = folder();
    perExpertFile(join(e2, 'a.safetensors'));
    writeRawSafetensors(join(e2, 'b.safetensors'), [...extra, bf16Raw(`${P}.down_proj`, [E, H, I], () => 0)]);
    const m = (() => {
      try {
        openCheckpoint(e2, TINY, { specs: STACKED });
      } catch (e) {
        return (e as Error).message;
      }
    })();
    expect(m).toMatch(/b\.safetensors: tensor 'model.layers.0.mlp.experts.down_proj' is stacked while model.layers.0.mlp.experts.\{e\}.\* are per-expert/);
    expect(m).toMatch(/config\/checkpoint mismatch: model.layers.0.mlp.experts.8.\* is beyond the 8 experts of config 'tiny'/);
  });
  it('one tensor under both its names', () => {
    expect(openError([bf16Raw('model.norm.weight', [1], () => 0), bf16Raw('model.language_model.norm.weight', [1], () => 0)], [])).toMatch(
      /tensor 'model.language_model.norm.weight' and .* tensor 'model.norm.weight' are both 'model.norm.weight'/,
    );
  });
  it('a truncated shard and a corrupt header, naming the file', () => {
    const d = folder();
    const path = join(d, 'model-00001-of-00001.safetensors');
    writeRawSafetensors(path, [bf16Raw('a', [64], () => 1)]);
    truncateSync(path, statSync(path).size - 10);
    expect(() => openCheckpoint(d, TINY, { specs: [spec('a', [64])] })).toThrow(new RegExp(`${path}: truncated file: tensor 'a' needs`));
    const fd = openSync(path, 'w');
    writeSync(fd, new Uint8Array([15, 0, 0, 0, 0, 0, 0, 0]));
    writeSync(fd, '{"a": {"dtype":');
    closeSync(fd);
    expect(() => openCheckpoint(d, TINY, { specs: [] })).toThrow(new RegExp(`${path}: malformed header: not valid JSON`));
  });
  it('an index naming a missing shard, or a tensor in another shard', () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model-00001-of-00002.safetensors'), [bf16Raw('a', [1], () => 0)]);
    writeFileSync(
      join(d, 'model.safetensors.index.json'),
      JSON.stringify({ weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors', c: 'model-00002-of-00002.safetensors' } }),
    );
    expect(() => openCheckpoint(d, TINY, { specs: [] })).toThrow(
      /model.safetensors.index.json: names shard .*model-00002-of-00002.safetensors \(for tensor 'b' and 1 more\), which does not exist/,
    );
  });
  it('a folder whose config.json describes another model', () => {
    const d = folder();
    writeFileSync(join(d, 'config.json'), JSON.stringify(hfTextConfigJson(TINY)));
    writeRawSafetensors(join(d, 'model.safetensors'), [bf16Raw('a', [1], () => 0)]);
    expect(() => openCheckpoint(d, SMALL, { specs: [] })).toThrow(
      /config\/checkpoint mismatch: .*config.json describes another model than config 'small' \(small vs checkpoint\): hiddenSize 128 vs 32, numLayers 8 vs 4/,
    );
    expect(openCheckpoint(d, TINY, { specs: [] }).unused).toEqual(['a']);
  });
  it('paths that are no checkpoint', () => {
    const d = folder();
    expect(() => openCheckpoint(d, TINY)).toThrow(/the model folder has no .safetensors files and no model.safetensors.index.json/);
    writeFileSync(join(d, 'weights.bin'), 'x');
    expect(() => openCheckpoint(join(d, 'weights.bin'), TINY)).toThrow(/weights.bin: not a .safetensors file, a \*.index.json or a model folder/);
    expect(() => openCheckpoint(join(d, 'nope'), TINY)).toThrow(/nope: no such checkpoint file or model folder/);
  });
});

describe('openCheckpoint: an index names only files in its model folder', () => {
  const index = (d: string, weightMap: Record<string, string>) =>
    writeFileSync(join(d, 'model.safetensors.index.json'), JSON.stringify({ weight_map: weightMap }));
  const errorOf = (d: string): string => {
    try {
      openCheckpoint(d, TINY, { specs: [] }).source.close();
    } catch (e) {
      return (e as Error).message;
    }
    return 'opened';
  };

  it('a path leaving the folder, an absolute path, or a link pointing out of it is refused, naming the index, the tensor and the path', () => {
    const d = folder();
    const idx = join(d, 'model.safetensors.index.json');
    // a valid shard just outside the folder: it would load silently
    writeRawSafetensors(join(root, 'outside.safetensors'), [bf16Raw('a', [1], () => 0)]);
    writeRawSafetensors(join(d, 'model-00001-of-00001.safetensors'), [bf16Raw('b', [1], () => 0)]);
    index(d, { a: '../outside.safetensors', b: 'model-00001-of-00001.safetensors' });
    expect(errorOf(d)).toBe(`${idx}: names shard "../outside.safetensors" (for tensor 'a'), which is outside the model folder ${d}`);
    index(d, { 'lm_head.weight': '../../../../etc/passwd' });
    expect(errorOf(d)).toBe(`${idx}: names shard "../../../../etc/passwd" (for tensor 'lm_head.weight'), which is outside the model folder ${d}`);
    index(d, { 'lm_head.weight': '/etc/passwd' });
    expect(errorOf(d)).toBe(
      `${idx}: names shard "/etc/passwd" (for tensor 'lm_head.weight'), an absolute path: an index may name only files in its model folder ${d}`,
    );
    symlinkSync(join(root, 'outside.safetensors'), join(d, 'inside.safetensors'));
    index(d, { a: 'inside.safetensors' });
    expect(errorOf(d)).toBe(
      `${idx}: names shard ${join(d, 'inside.safetensors')} (for tensor 'a'), a symbolic link to ${join(realpathSync(root), 'outside.safetensors')}, which is outside the model folder ${d}`,
    );
    // a folder that is itself a link, and a link within the folder, are fine
    mkdirSync(join(d, 'sub'));
    symlinkSync(join(d, 'model-00001-of-00001.safetensors'), join(d, 'sub', 'b.safetensors'));
    index(d, { b: 'sub/b.safetensors' });
    expect(errorOf(d)).toBe('opened');
    symlinkSync(d, join(root, `${basename(d)}-link`));
    expect(errorOf(join(root, `${basename(d)}-link`))).toBe('opened');
  });

  it("a Hugging Face cache snapshot's links into its repo's blobs are inside", () => {
    const repo = join(folder(), 'models--org--name');
    const snapshot = join(repo, 'snapshots', 'abc123');
    mkdirSync(join(repo, 'blobs'), { recursive: true });
    mkdirSync(snapshot, { recursive: true });
    writeRawSafetensors(join(repo, 'blobs', 'f00d'), [bf16Raw('a', [1], () => 0)]);
    symlinkSync('../../blobs/f00d', join(snapshot, 'model-00001-of-00001.safetensors'));
    index(snapshot, { a: 'model-00001-of-00001.safetensors' });
    expect(errorOf(snapshot)).toBe('opened');
    // but not a path written to leave the snapshot
    index(snapshot, { a: '../../blobs/f00d' });
    expect(errorOf(snapshot)).toMatch(/names shard "..\/..\/blobs\/f00d" \(for tensor 'a'\), which is outside the model folder/);
  });

  it('an empty weight_map, a symbolic link loop, and a file that is no safetensors file', () => {
    const d = folder();
    const idx = join(d, 'model.safetensors.index.json');
    index(d, {});
    expect(errorOf(d)).toBe(`${idx}: the index's weight_map is empty: it names no tensors`);
    symlinkSync(join(d, 'loop-b'), join(d, 'loop-a'));
    symlinkSync(join(d, 'loop-a'), join(d, 'loop-b'));
    index(d, { a: 'loop-a' });
    expect(errorOf(d)).toBe(`${idx}: names shard ${join(d, 'loop-a')} (for tensor 'a'), which is a symbolic link loop`);
    // a text file's first 8 bytes are no header length: said so, its bytes not shown as a number
    writeFileSync(join(d, 'text.safetensors'), 'root:x:0:0:root:/root:/bin/bash\n');
    index(d, { a: 'text.safetensors' });
    expect(errorOf(d)).toBe(
      `${join(d, 'text.safetensors')}: not a safetensors file (its first 8 bytes are no header length within its 32 bytes, and no JSON header follows them)`,
    );
  });

  it('a fifo as the index or as config.json is refused at once', () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [bf16Raw('a', [1], () => 0)]);
    /** A fifo with a writer waiting on it: a reader that opened it would get `{}` rather than hang this test. */
    const fifoWithWriter = (path: string) => {
      expect(spawnSync('mkfifo', [path]).status).toBe(0);
      return spawn('sh', ['-c', 'printf {} > "$1"', 'sh', path], { stdio: 'ignore' });
    };
    const t0 = performance.now();
    const configWriter = fifoWithWriter(join(d, 'config.json'));
    try {
      expect(errorOf(d)).toBe(`${join(d, 'config.json')}: is a fifo, not a JSON file`);
    } finally {
      configWriter.kill('SIGKILL');
    }
    rmSync(join(d, 'config.json'));
    const indexWriter = fifoWithWriter(join(d, 'model.safetensors.index.json'));
    try {
      expect(errorOf(d)).toBe(`${join(d, 'model.safetensors.index.json')}: malformed index: is a fifo, not a JSON file`);
    } finally {
      indexWriter.kill('SIGKILL');
    }
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});

describe('openCheckpoint: memory', () => {
  it('a rank of tp 8 reading its experts of a 200 MB tensor grows RSS by far less than the file', async () => {
    const d = folder();
    // [64, 800, 2048] bf16 = 209,715,200 bytes, written as a header and a sparse data section
    const shape = [64, 800, 2048];
    const data = numel(shape) * 2;
    const header = JSON.stringify({ [`${P}.gate_up_proj`]: { dtype: 'BF16', shape, data_offsets: [0, data] } });
    const json = header.padEnd(Math.ceil(header.length / 8) * 8, ' ');
    const path = join(d, 'model.safetensors');
    const fd = openSync(path, 'w');
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, BigInt(json.length), true);
    writeSync(fd, prefix);
    writeSync(fd, json);
    closeSync(fd);
    truncateSync(path, 8 + json.length + data);
    const c = openCheckpoint(d, TINY, { specs: [spec(`${P}.gate_up_proj`, shape)] });
    const ref: WeightRef = { name: `${P}.gate_up_proj`, slice: { axis: 0, ranges: [[8, 16]] }, reshape: [8 * 800, 2048] };
    const rss0 = process.memoryUsage().rss;
    const t = await resolveWeight(c.source, ref);
    const grown = process.memoryUsage().rss - rss0;
    console.info(`tp 8 rank slice of a ${data} byte tensor: read ${c.source.bytesRead()} bytes, RSS +${(grown / 2 ** 20).toFixed(1)} MiB`);
    expect(c.source.bytesRead()).toBe(data / 8);
    expect(t.data.length).toBe(8 * 800 * 2048);
    expect(grown).toBeLessThan(data / 3);
    c.source.close();
  });
});

describe('filePlan: a plain read as file byte runs, for a native loader', () => {
  /** the runs' bytes, concatenated */
  function readRuns(runs: readonly FileRun[]): Uint8Array {
    const out = new Uint8Array(runs.reduce((n, r) => n + r.bytes, 0));
    let at = 0;
    for (const r of runs) {
      const fd = openSync(r.file, 'r');
      try {
        expect(readSync(fd, out, at, r.bytes, r.offset)).toBe(r.bytes);
      } finally {
        closeSync(fd);
      }
      at += r.bytes;
    }
    return out;
  }

  it('per-expert tensors served stacked: every slice, and every rank of tp 4, as runs holding its bytes', async () => {
    const d = folder();
    perExpertFile(join(d, 'model.safetensors'), true);
    const s = openCheckpoint(d, TINY, { specs: STACKED }).source;
    const cases: [string, WeightSlice | undefined][] = [
      [`${P}.gate_up_proj`, undefined],
      [`${P}.gate_up_proj`, { axis: 0, ranges: [[2, 4]] }],
      [`${P}.gate_up_proj`, { axis: 1, ranges: [[8, 24]] }],
      [`${P}.down_proj`, { axis: 2, ranges: [[4, 6]] }],
      [
        `${P}.down_proj`,
        {
          axis: 1,
          ranges: [
            [0, 3],
            [10, 12],
          ],
        },
      ],
    ];
    for (const [name, slice] of cases) {
      const plan = s.filePlan(name, slice)!;
      const t = await s.read(name, slice);
      expect([plan.dtype, plan.shape]).toEqual([t.dtype, t.shape]);
      expect(readRuns(plan.runs)).toEqual(bytes(t.data));
    }
    for (let rank = 0; rank < 4; rank++) {
      for (const ref of [moeRankWeights(TINY, 0, rank, 4).expertsGateUp, moeRankWeights(TINY, 0, rank, 4).expertsDown]) {
        const plan = planWeightRead(s, ref)!;
        const t = await resolveWeight(s, ref);
        expect(plan.shape).toEqual(t.shape);
        expect(readRuns(plan.reads.flatMap((r) => r.runs))).toEqual(bytes(t.data));
      }
    }
    // a slice outside the tensor is the read's own error
    expect(() => s.filePlan(`${P}.down_proj`, { axis: 1, ranges: [[0, H + 1]] })).toThrow(/slice range \[0, 33\) is outside axis 1/);
    s.close();
  });

  it('concatenated refs: row slices across the parts, column slices of each, reshaped; one read per part', async () => {
    const d = folder();
    const file = join(d, 'cat.safetensors');
    writeRawSafetensors(file, [bf16Raw('x', [3, 4], (i) => 100 + i), bf16Raw('y', [5, 4], (i) => 200 + i)]);
    const s = SafetensorsWeightSource.open(file);
    const refs: WeightRef[] = [
      { name: 'xy', concat: ['x', 'y'] },
      {
        name: 'xy',
        concat: ['x', 'y'],
        slice: {
          axis: 0,
          ranges: [
            [1, 2],
            [2, 7],
          ],
        },
      },
      { name: 'xy', concat: ['x', 'y'], slice: { axis: 1, ranges: [[1, 3]] } },
      { name: 'xy', concat: ['x', 'y'], reshape: [2, 16] },
      {
        name: 'x',
        slice: {
          axis: 1,
          ranges: [
            [0, 1],
            [3, 4],
          ],
        },
      },
    ];
    for (const ref of refs) {
      const plan = planWeightRead(s, ref)!;
      const t = await resolveWeight(s, ref);
      expect([plan.dtype, plan.shape]).toEqual([t.dtype, t.shape]);
      expect(readRuns(plan.reads.flatMap((r) => r.runs))).toEqual(bytes(t.data));
    }
    // rows 1..7 of [x; y]: x's rows 1..3 (two ranges), then y's rows 0..5
    expect(planWeightRead(s, refs[1])!.reads.map((r) => [r.name, r.slice])).toEqual([
      ['x', { axis: 0, ranges: [[1, 2]] }],
      ['x', { axis: 0, ranges: [[2, 3]] }],
      ['y', { axis: 0, ranges: [[0, 4]] }],
    ]);
    s.close();
  });

  it('no plan where the read converts (FP8, fp32 read as bf16) or no file backs it', async () => {
    const d = folder();
    writeRawSafetensors(join(d, 'model.safetensors'), [
      { name: 'q.weight', dtype: 'F8_E4M3', shape: [2, 2], bytes: Uint8Array.of(0x38, 0x38, 0x38, 0x38) },
      f32Raw('q.weight_scale_inv', [1, 1], [1]),
      f32Raw('n.weight', [2], [1, 2]),
      bf16Raw('b.weight', [2], () => 0x3f80),
    ]);
    const specs = [spec('q.weight', [2, 2]), spec('n.weight', [2]), spec('b.weight', [2])];
    const s = openCheckpoint(d, TINY, { specs }).source;
    expect(s.filePlan('q.weight')).toBeNull();
    expect(s.filePlan('n.weight')).toBeNull();
    expect(s.filePlan('b.weight')!.runs).toHaveLength(1);
    expect(planWeightRead(s, { name: 'qb', concat: ['b.weight', 'n.weight'] })).toBeNull();
    expect(planWeightRead(new SyntheticWeightSource(specs, 0), { name: 'b.weight' })).toBeNull();
    s.close();
  });
});
