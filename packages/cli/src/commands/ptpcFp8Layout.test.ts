// `hcsp weights --layout ptpc-fp8` and reading it back: the release's layout (per-channel
// FP8 + F32 [N, 1] scales, the FP8 PLE table with its global scale, the multimodal names and
// config), the same prefill as the same weights dequantized into an hf folder, and every
// malformed-scale case refused with one error naming the tensor.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  bf16ToF32,
  CpuBackend,
  f32ToBf16,
  fp8ToF32,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  PRESETS,
  PRODUCTION_QUANT_STYLE,
  quantizeBf16RowsFp8,
  runOnce,
  SyntheticWeightSource,
  type Tensor,
  type WeightSource,
} from '@hcsp/core';
import { hfTextConfigJson, openCheckpoint, resolveModelConfig, SafetensorsWeightSource, writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPrefillCommand } from './prefill.ts';
import { writeModelFolder } from './weights.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-ptpc-fp8-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const SEED = 3;
const ptpc = join(root, 'tiny-ptpc');
beforeAll(async () => {
  await writeModelFolder({ config: PRESETS.tiny, seed: SEED, out: ptpc, layout: 'ptpc-fp8', shards: 2, force: false });
}, 120_000);

/** `hcsp prefill` of the tiny model at tp 2, T 24, SP off, ring, the folder's seed, --json --quiet */
const TINY_RUN = { config: 'tiny', tp: '2', tokens: '24', sp: 'off', reduce: 'ring', seed: String(SEED), stack: 'model', json: true, quiet: true };

const released = (name: string) => (name.startsWith('model.') ? `model.language_model.${name.slice(6)}` : name);
const PER_CHANNEL =
  /(\.mlp\.experts\.\d+\.(gate|up|down)_proj|\.mlp\.shared_expert\.(gate|up|down)_proj|\.self_attn\.[qkvo]_proj|\.linear_attn\.out_proj|\.ple\.(key|value)_proj)\.weight$/;

/** Every tensor of a folder, raw as stored (FP8 bytes included). */
async function readAll(folder: string): Promise<Map<string, Tensor>> {
  const raw = SafetensorsWeightSource.open(join(folder, 'model.safetensors.index.json'));
  try {
    const out = new Map<string, Tensor>();
    for (const n of raw.names()) out.set(n, await raw.read(n));
    return out;
  } finally {
    raw.close();
  }
}

/** A model folder (one shard, the index, config.json) holding `tensors`. */
function writeFolder(dir: string, tensors: ReadonlyMap<string, Tensor>, config: unknown): string {
  mkdirSync(dir, { recursive: true });
  writeSafetensorsFile(join(dir, 'model.safetensors'), tensors, { format: 'pt' });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

const ptpcConfig = () => JSON.parse(readFileSync(join(ptpc, 'config.json'), 'utf8'));
let variants = 0;
/** The written folder with some tensors replaced or removed (undefined), as a new folder. */
async function variant(change: Record<string, Tensor | undefined>, config: unknown = ptpcConfig()): Promise<string> {
  const t = await readAll(ptpc);
  for (const [n, v] of Object.entries(change)) {
    if (v === undefined) t.delete(n);
    else t.set(n, v);
  }
  return writeFolder(join(root, `variant-${variants++}`), t, config);
}

function openError(folder: string): string {
  try {
    openCheckpoint(folder, PRESETS.tiny).source.close();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('openCheckpoint did not throw');
}

const W = 'model.language_model.layers.0.mlp.experts.3.up_proj';

let dequantizedFolder: string | undefined;
/** The tiny folder's weights as read (FP8 dequantized) written as an hf folder, once. */
async function dequantizedHf(): Promise<string> {
  if (dequantizedFolder) return dequantizedFolder;
  const c = openCheckpoint(ptpc, PRESETS.tiny);
  try {
    const dequantized = new Map<string, Tensor>();
    for (const s of modelWeightSpecs(PRESETS.tiny, MODEL_SUB_LAYERS)) dequantized.set(s.name, await c.source.read(s.name));
    dequantizedFolder = writeFolder(join(root, 'tiny-dequantized-hf'), dequantized, hfTextConfigJson(PRESETS.tiny));
    return dequantizedFolder;
  } finally {
    c.source.close();
  }
}

/** preparePrefill's options of TINY_RUN */
const TINY_PREFILL = { config: PRESETS.tiny, tokens: 24, tp: 2, sp: 'off', reduce: 'ring', seed: SEED, subLayers: MODEL_SUB_LAYERS } as const;

/** A tiny prefill (tp 2, cpu) on `weights` (default: the synthetic ones): its final streams h, graph and FP8 linears. */
async function prefill(weights?: WeightSource, fp8Weights?: 'device' | 'dequantize') {
  const p = preparePrefill({ ...TINY_PREFILL, weights, ...(fp8Weights ? { fp8Weights } : {}) });
  const r = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep: [p.outputs.h] });
  return { h: r.values.get(p.outputs.h)!.data, graph: p.graph, linears: p.fp8WeightLinears };
}
const f32 = (shape: number[], values: number[]): Tensor => ({ dtype: 'f32', shape, data: Float32Array.from(values) });

describe('hcsp weights --layout ptpc-fp8', () => {
  for (const name of ['tiny', 'small']) {
    it(`${name}: the release's names, dtypes and config; per-channel scales are ATOM's PTPC quantizer's; every tensor reads back`, async () => {
      const config = PRESETS[name];
      const out = name === 'tiny' ? ptpc : join(root, `${name}-ptpc`);
      if (name !== 'tiny') await writeModelFolder({ config, seed: SEED, out, layout: 'ptpc-fp8', shards: 3, force: false });
      expect(resolveModelConfig(out)).toEqual({ ...config, name: out });
      const cfg = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
      expect(cfg.architectures).toEqual(['Qwen4ExpForConditionalGeneration']);
      expect(cfg.quantization_config).toMatchObject({ quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic' });
      expect(cfg.quantization_config.weight_block_size).toBeUndefined();
      expect(cfg.quantization_config.modules_to_not_convert).toEqual(
        expect.arrayContaining(['lm_head', '*.mlp.gate', '*.linear_attn.in_proj_qkv', '*.self_attn.indexer.index_qk_proj']),
      );

      const stored = await readAll(out);
      const specs = modelWeightSpecs(config, MODEL_SUB_LAYERS);
      const synthetic = new SyntheticWeightSource(specs, SEED);
      let channel = 0;
      for (const [n, t] of stored) {
        if (n.endsWith('.weight_scale')) continue;
        expect(n.startsWith('model.') ? n.startsWith('model.language_model.') : true, n).toBe(true);
        const isTable = /\.ngram_embedding\.shard_\d+\.weight$/.test(n);
        if (!PER_CHANNEL.test(n)) {
          expect(t.dtype, n).toBe(isTable ? 'fp8e4m3fn' : specs.find((s) => released(s.name) === n)!.dtype);
          continue;
        }
        channel++;
        expect(t.dtype, n).toBe('fp8e4m3fn');
        const s = stored.get(n.replace(/\.weight$/, '.weight_scale'))!;
        expect([s.dtype, s.shape], n).toEqual(['f32', [t.shape[0], 1]]);
      }
      const layers = config.numLayers + (config.mtp ? 1 : 0);
      const attention = specs.filter((s) => /self_attn\.[qkvo]_proj\.weight$/.test(s.name)).length;
      const gdn = specs.filter((s) => /linear_attn\.out_proj\.weight$/.test(s.name)).length;
      expect(channel).toBe(layers * (3 * config.moe.numExperts + 3) + attention + gdn + 2 * config.ple.layerIds.length);

      // the quantizer: s[o] = fl(amax * fl(1/448)), q = cvt(fl(w * fl(1/s))), on expert 3's up_proj of layer 0
      const E = config.moe.numExperts;
      const I = config.moe.intermediate;
      const H = config.hiddenSize;
      const stack = synthetic.tensor('model.layers.0.mlp.experts.gate_up_proj').data as Uint16Array;
      const up = stack.subarray((3 * 2 * I + I) * H, (3 * 2 * I + 2 * I) * H);
      const want = quantizeBf16RowsFp8(up, I, H, 'e4m3fn', PRODUCTION_QUANT_STYLE.separate);
      expect(stored.get(`${W}.weight`)!.data).toEqual(want.q);
      expect(stored.get(`${W}.weight_scale`)!.data).toEqual(want.scale);
      expect(E).toBeGreaterThan(3);

      const c = openCheckpoint(out, resolveModelConfig(out));
      try {
        expect(c.unused).toEqual([]);
        expect(c.conversions).toEqual([
          `${channel} FP8 tensors with per-channel scales dequantized to bf16 as bf(fl(q * s[o]))`,
          `${config.ple.splitNgramParts * config.ple.layerIds.length} FP8 tensors with a global scale dequantized to bf16 as bf(q * bf(s))`,
        ]);
        // w' = bf(fl(dec(q) * s[o])) for a per-channel tensor, read through the stacked experts
        const got = (await c.source.read('model.layers.0.mlp.experts.gate_up_proj', { axis: 0, ranges: [[3, 4]] })).data as Uint16Array;
        const deq = Uint16Array.from(want.q, (b, i) => f32ToBf16(Math.fround(fp8ToF32(b, 'e4m3fn') * want.scale[Math.floor(i / H)])));
        expect(got.subarray(I * H)).toEqual(deq);
        // within half an e4m3 step of the synthetic values (plus w's bf16 rounding)
        expect(deq.findIndex((v, i) => Math.abs(bf16ToF32(v) - bf16ToF32(up[i])) > Math.abs(bf16ToF32(up[i])) * 2 ** -4 + 2 ** -12)).toBe(-1);
      } finally {
        c.source.close();
      }
    }, 120_000);
  }

  it('tiny: dequantized on read, a prefill on the folder equals one on the same weights dequantized into an hf folder (cpu), and differs from the bf16 synthetic weights', async () => {
    const config = PRESETS.tiny;
    const c = openCheckpoint(ptpc, config);
    const h = openCheckpoint(await dequantizedHf(), config);
    try {
      const deq = await prefill(c.source, 'dequantize');
      expect(deq.linears).toBe(0);
      expect(deq.h).toEqual((await prefill(h.source)).h);
      expect(deq.h).not.toEqual((await prefill()).h);
    } finally {
      c.source.close();
      h.source.close();
    }
  }, 120_000);

  it('tiny: by default the FP8 linears run as PTPC GEMMs on the stored FP8 bytes and scales (cpu); the CLI does the same', async () => {
    const config = PRESETS.tiny;
    const c = openCheckpoint(ptpc, config);
    try {
      const deq = await prefill(c.source, 'dequantize');
      const dev = await prefill(c.source);
      // every linear over per-channel FP8 weights: attention q, k, v, o, GDN out_proj, the shared expert, the PLE projections
      const fp8Scopes = new Set(dev.graph.nodes.filter((n) => n.op === 'fp8LinearPtpc').map((n) => n.scope.replace(/^L\d+\./, '')));
      expect([...fp8Scopes].sort()).toEqual([
        'attn.k',
        'attn.out',
        'attn.qgate',
        'attn.v',
        'mlp.shared_down',
        'mlp.shared_gate_up',
        'mtp.attn.k',
        'mtp.attn.out',
        'mtp.attn.qgate',
        'mtp.attn.v',
        'mtp.mlp.shared_down',
        'mtp.mlp.shared_gate_up',
        'ple.key_proj',
        'ple.value_proj',
      ]);
      expect(dev.graph.nodes.filter((n) => n.op === 'fp8LinearPtpc')).toHaveLength(dev.linears);
      expect(dev.linears).toBe(deq.graph.nodes.filter((n) => n.op === 'linear').length - dev.graph.nodes.filter((n) => n.op === 'linear').length);
      // per rank (tp 2): 4 per attention layer, 1 per GDN layer, 2 shared-expert GEMMs per layer (MTP's included), 2 PLE projections
      const attention = Math.floor(config.numLayers / config.fullAttentionInterval);
      const layers = config.numLayers + (config.mtp ? 1 : 0);
      expect(dev.linears / 2).toBe(4 * (attention + (config.mtp ? 1 : 0)) + (config.numLayers - attention) + 2 * layers + 2 * config.ple.layerIds.length);
      // what the device holds: those weights as FP8 bytes + F32 scales, none of them as bf16
      const weightBytes = (g: typeof dev.graph, dtype?: string) =>
        Object.values(g.values)
          .filter((v) => v.kind === 'weight' && (!dtype || v.dtype === dtype))
          .reduce((a, v) => a + v.shape.reduce((x, y) => x * y, 1) * (v.dtype === 'bf16' ? 2 : v.dtype === 'f32' ? 4 : 1), 0);
      expect(weightBytes(dev.graph, 'fp8e4m3fn')).toBeGreaterThan(0);
      expect(weightBytes(dev.graph)).toBeLessThan(weightBytes(deq.graph));
      const bf16Names = Object.values(dev.graph.values)
        .filter((v) => v.kind === 'weight' && v.dtype === 'bf16')
        .map((v) => v.weight!.name);
      expect(bf16Names.filter((n) => c.source.fp8PerChannel(n) !== null)).toEqual([]);
      // the routed experts too: every MoE (MTP's included) on every rank runs moeExpertsFp8Ptpc on the stored bytes, no bf16 expert weight is left
      expect(dev.graph.nodes.filter((n) => n.op === 'moeExperts')).toEqual([]);
      expect(dev.graph.nodes.filter((n) => n.op === 'moeExpertsFp8Ptpc')).toHaveLength(2 * layers);
      expect(bf16Names.filter((n) => /\.mlp\.experts\./.test(n))).toEqual([]);
      const expertBytes = Object.values(dev.graph.values).filter(
        (v) => v.kind === 'weight' && /\.mlp\.experts\./.test(v.weight!.name) && v.dtype === 'fp8e4m3fn',
      );
      expect(expertBytes).toHaveLength(2 * 2 * layers);
      expect(expertBytes.every((v) => (v.weight!.concat ?? []).every((n) => /\.mlp\.experts\.\d+\.(gate|up|down)_proj\.weight#fp8$/.test(n)))).toBe(true);
      // FP8 GEMMs round differently from bf16 GEMMs on the dequantized weights, but not far
      expect(dev.h).not.toEqual(deq.h);
      const a = Array.from(dev.h as Uint16Array, bf16ToF32);
      const b = Array.from(deq.h as Uint16Array, bf16ToF32);
      const scale = Math.max(...b.map(Math.abs));
      expect(Math.max(...a.map((v, i) => Math.abs(v - b[i])))).toBeLessThan(0.1 * scale);
    } finally {
      c.source.close();
    }
    const base = { ...TINY_RUN, backend: 'cpu' };
    const cli = JSON.parse(await runPrefillCommand({ ...base, weights: ptpc } as never)) as { outputSha256: string; fp8WeightLinears: number };
    const hf = JSON.parse(await runPrefillCommand({ ...base, weights: await dequantizedHf() } as never)) as { outputSha256: string; fp8WeightLinears: number };
    expect(cli.outputSha256).not.toBe(hf.outputSha256);
    const again = openCheckpoint(ptpc, config);
    expect([cli.fp8WeightLinears, hf.fp8WeightLinears]).toEqual([(await prefill(again.source)).linears, 0]);
    again.source.close();
    expect(await runPrefillCommand({ ...base, json: false, weights: ptpc } as never)).toMatch(
      / weights: .*tiny-ptpc; \d+ linears as FP8 GEMMs on its FP8 weights\n/,
    );
  }, 120_000);

  it('tiny, --fp8 e4m3fnuz (gfx942): the checkpoint e4m3fn weights run as e4m3fnuz (same bits, -0 -> 0, scales x2), on cpu and the host device alike', async () => {
    const c = openCheckpoint(ptpc, PRESETS.tiny);
    try {
      const p = preparePrefill({ ...TINY_PREFILL, weights: c.source, fp8: 'e4m3fnuz' });
      const gemms = p.graph.nodes.filter((n) => n.op === 'fp8LinearPtpc');
      expect(p.fp8WeightLinears).toBeGreaterThan(0);
      expect(new Set(gemms.map((n) => n.attrs.format))).toEqual(new Set(['e4m3fnuz']));
      const fp8Weights = Object.values(p.graph.values).filter((v) => v.kind === 'weight' && v.dtype.startsWith('fp8'));
      expect(fp8Weights.length).toBeGreaterThan(0);
      // the converted tensors (a concatenation: each part)
      expect(fp8Weights.filter((v) => v.dtype !== 'fp8e4m3fnuz' || !(v.weight!.concat ?? [v.weight!.name]).every((n) => n.endsWith('#fp8_e4m3fnuz')))).toEqual(
        [],
      );
    } finally {
      c.source.close();
    }
    const base = { ...TINY_RUN, weights: ptpc, fp8: 'e4m3fnuz' };
    type Summary = { outputSha256: string; fp8WeightLinears: number };
    const cpu = JSON.parse(await runPrefillCommand({ ...base, backend: 'cpu' } as never)) as Summary;
    const host = JSON.parse(await runPrefillCommand({ ...base, backend: 'rocm', device: 'host' } as never)) as Summary;
    expect(cpu.fp8WeightLinears).toBeGreaterThan(0);
    expect(host.outputSha256).toBe(cpu.outputSha256);
    const fn = JSON.parse(await runPrefillCommand({ ...base, backend: 'cpu', fp8: 'e4m3fn' } as never)) as Summary;
    expect(fn.outputSha256).not.toBe(cpu.outputSha256);
  }, 240_000);

  it('tiny: the host and emulated devices give the cpu reference bits from the FP8 folder, and load fewer bytes than from the dequantized hf folder', async () => {
    type Summary = { outputSha256: string; weightLoad: { bytes: number } };
    const run = async (o: Record<string, string>) => JSON.parse(await runPrefillCommand({ ...TINY_RUN, ...o } as never)) as Summary;
    const cpu = await run({ backend: 'cpu', weights: ptpc });
    for (const device of ['host', 'emulated']) {
      const fp8 = await run({ backend: 'rocm', device, weights: ptpc });
      expect(fp8.outputSha256, device).toBe(cpu.outputSha256);
      const bf16 = await run({ backend: 'rocm', device, weights: await dequantizedHf() });
      expect(fp8.weightLoad.bytes, device).toBeLessThan(bf16.weightLoad.bytes);
    }
  }, 240_000);
});

describe('a malformed PTPC-FP8 folder: one error naming the tensor', () => {
  it('a missing scale', async () => {
    expect(openError(await variant({ [`${W}.weight_scale`]: undefined }))).toMatch(
      new RegExp(`^checkpoint: 1 problem: .*model\\.safetensors: tensor '${W.replace(/\./g, '\\.')}\\.weight': F8_E4M3 has no scale tensor`),
    );
  });
  it('a scale of the wrong shape: transposed, one too few, per-tensor-like [N, 2]', async () => {
    expect(openError(await variant({ [`${W}.weight_scale`]: f32([1, 16], Array(16).fill(1)) }))).toMatch(
      /1 problem: .*tensor '.*experts\.3\.up_proj\.weight_scale': per-channel scales of F8_E4M3\[16,32\] must be F32\[16,1\] \(or F32\[16\]\), got F32\[1,16\]/,
    );
    expect(openError(await variant({ [`${W}.weight_scale`]: f32([15, 1], Array(15).fill(1)) }))).toMatch(
      /tensor '.*experts\.3\.up_proj\.weight_scale': a global FP8 scale must be one F32 or BF16 value, got F32\[15,1\]; per-channel scales of F8_E4M3\[16,32\] are F32\[16,1\]/,
    );
    expect(openError(await variant({ [`${W}.weight_scale`]: f32([16, 2], Array(32).fill(1)) }))).toMatch(
      /tensor '.*experts\.3\.up_proj\.weight_scale': a global FP8 scale must be one F32 or BF16 value, got F32\[16,2\]/,
    );
  });
  it('a scale of the wrong dtype', async () => {
    expect(openError(await variant({ [`${W}.weight_scale`]: { dtype: 'bf16', shape: [16, 1], data: new Uint16Array(16).fill(0x3f80) } }))).toMatch(
      /tensor '.*experts\.3\.up_proj\.weight_scale': per-channel scales of F8_E4M3\[16,32\] must be F32\[16,1\] \(or F32\[16\]\), got BF16\[16,1\]/,
    );
  });
  for (const [what, bad] of [
    ['NaN', NaN],
    ['infinite', -Infinity],
    ['zero', 0],
    ['negative', -2],
  ] as const) {
    it(`a ${what} scale: refused when read (prefill fails naming the scale tensor and row)`, async () => {
      const values = Array(16).fill(0.01);
      values[7] = bad;
      const folder = await variant({ [`${W}.weight_scale`]: f32([16, 1], values) });
      const c = openCheckpoint(folder, PRESETS.tiny);
      await expect(c.source.read('model.layers.0.mlp.experts.gate_up_proj')).rejects.toThrow(
        /model\.safetensors: tensor 'model\.language_model\.layers\.0\.mlp\.experts\.3\.up_proj\.weight_scale' holds -?(NaN|Infinity|0|2) at row 7: per-channel FP8 scales must be finite and > 0/,
      );
      c.source.close();
      const base = { backend: 'cpu', config: 'tiny', tp: '1', tokens: '8', sp: 'off', reduce: 'ring', seed: '1', stack: 'model', json: true, quiet: true };
      await expect(runPrefillCommand({ ...base, weights: folder } as never)).rejects.toThrow(/experts\.3\.up_proj\.weight_scale' holds .* at row 7/);
    }, 60_000);
  }
  it('a config.json declaring 128x128 block FP8 over per-channel tensors', async () => {
    const config = ptpcConfig();
    config.quantization_config.weight_block_size = [128, 128];
    const m = openError(await variant({}, config));
    expect(m).toMatch(
      /tensor 'model\.language_model\.layers\.0\.mlp\.experts\.0\.gate_proj\.weight_scale': per-channel FP8 scales, but .*variant-\d+\/config\.json declares 128x128 block FP8 \(quantization_config\.weight_block_size\): the config and the tensors describe different checkpoints/,
    );
    // the same tensors under the folder's own PTPC config load
    openCheckpoint(await variant({}), PRESETS.tiny).source.close();
  });
  it('FP8 where the model reads bf16 (the router)', async () => {
    const gate = 'model.language_model.layers.0.mlp.gate';
    const folder = await variant({
      [`${gate}.weight`]: { dtype: 'fp8e4m3fn', shape: [8, 32], data: new Uint8Array(256) },
      [`${gate}.weight_scale`]: f32([8, 1], Array(8).fill(1)),
    });
    expect(openError(folder)).toMatch(
      /^checkpoint: 1 problem: .*tensor 'model\.language_model\.layers\.0\.mlp\.gate\.weight': F8_E4M3 where the model reads bf16/,
    );
  });
});
