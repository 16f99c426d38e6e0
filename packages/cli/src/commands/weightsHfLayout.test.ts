// `hcsp weights --layout hf` writes a folder Hugging Face's Qwen4ExpTextConfig and
// Qwen4ExpForCausalLM.from_pretrained accept as it is (issue 23 item 3), held against the rules
// and the state dict read from HF's source (test/support/hfQwen4Exp.ts, no PyTorch here); and
// hcsp reads what HF would write back (its diff config, the PLE buffers), to the same outputs.
import { closeSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuBackend, MODEL_SUB_LAYERS, preparePrefill, PRESETS, runOnce, type ModelConfig, type WeightSource } from '@hcsp/core';
import { openCheckpoint, openSafetensorsFile, resolveModelConfig } from '@hcsp/core/node';
import { afterAll, describe, expect, it } from 'vitest';
import { hfCheckpointTensors, hfConfigProblems, hfSavedConfig, type HfTensor } from '../../../../test/support/hfQwen4Exp.ts';
import { writeModelFolder } from './weights.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-weights-hf-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const SEED = 4;

/** an I64 tensor's values, read from the file's bytes (hcsp's reader narrows to int32; the multipliers are wider) */
function int64Values(file: string, begin: number, end: number): bigint[] {
  const fd = openSync(file, 'r');
  try {
    const len = Buffer.alloc(8);
    readSync(fd, len, 0, 8, 0);
    const dataStart = 8 + Number(len.readBigUInt64LE(0));
    const bytes = Buffer.alloc(end - begin);
    readSync(fd, bytes, 0, bytes.length, dataStart + begin);
    return Array.from({ length: bytes.length / 8 }, (_, i) => bytes.readBigInt64LE(8 * i));
  } finally {
    closeSync(fd);
  }
}

/** every tensor of a folder by name: dtype, shape, and the values of the I64 ones */
function folderTensors(folder: string): Map<string, HfTensor> {
  const index = JSON.parse(readFileSync(join(folder, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
  const out = new Map<string, HfTensor>();
  for (const file of new Set(Object.values(index.weight_map))) {
    const f = openSafetensorsFile(join(folder, file));
    try {
      for (const name of f.names()) {
        const e = f.entry(name);
        out.set(name, {
          dtype: e.dtype as HfTensor['dtype'],
          shape: [...e.shape],
          ...(e.dtype === 'I64' ? { values: int64Values(join(folder, file), e.begin, e.end) } : {}),
        });
      }
    } finally {
      f.close();
    }
  }
  return out;
}

/** what a from_pretrained of the folder would say: keys missing and unexpected (mtp.* ignored), and tensors of another dtype, shape or value */
function loadReport(folder: string): { missing: string[]; unexpected: string[]; mismatched: string[] } {
  const want = hfCheckpointTensors(readFileSync(join(folder, 'config.json'), 'utf8'));
  const got = folderTensors(folder);
  const key = (t: HfTensor | undefined) => JSON.stringify(t, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  const mismatched = [...want].filter(([n, w]) => got.has(n) && key(got.get(n)) !== key(w)).map(([n]) => n);
  return {
    missing: [...want.keys()].filter((n) => !got.has(n)),
    unexpected: [...got.keys()].filter((n) => !want.has(n) && !n.startsWith('mtp.')),
    mismatched,
  };
}

async function logitsAndH(config: ModelConfig, weights?: WeightSource): Promise<Uint16Array[]> {
  const p = preparePrefill({ config, tokens: 24, tp: 2, sp: 'off', reduce: 'ring', seed: SEED, subLayers: MODEL_SUB_LAYERS, weights, logits: 'all' });
  const r = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep: [p.outputs.h, p.outputs.logits] });
  return [r.values.get(p.outputs.h)!.data as Uint16Array, r.values.get(p.outputs.logits)!.data as Uint16Array];
}

describe('hcsp weights --layout hf: a folder HF loads as it is', () => {
  for (const name of ['tiny', 'small']) {
    it(`${name}: Qwen4ExpTextConfig accepts config.json, and the folder holds exactly Qwen4ExpForCausalLM's state dict (PLE buffers included)`, async () => {
      const config = PRESETS[name];
      const out = join(root, name);
      await writeModelFolder({ config, seed: SEED, out, layout: 'hf', shards: 2, force: false });
      const text = readFileSync(join(out, 'config.json'), 'utf8');
      expect(hfConfigProblems(text)).toEqual([]);
      const types = JSON.parse(text).layer_types as string[];
      expect(types.some((t) => t === 'deepseek_sparse_attention')).toBe(true);
      expect(loadReport(out)).toEqual({ missing: [], unexpected: [], mismatched: [] });
      // the buffers are there for every PLE layer
      for (const layer of config.ple.layerIds) {
        for (const b of ['layer_multipliers', 'ngram_heads_vocab_sizes', 'ngram_heads_offsets'])
          expect(folderTensors(out).get(`model.layers.${layer}.ple.ple_embedding.${b}`)?.dtype).toBe('I64');
      }
    });
  }

  it('a QSA layer that is a PLE layer is hybrid_indexed, as HF derives it; the release layouts keep the shipped "full_attention"', async () => {
    // no MTP head: its draft layer is built as a QSA layer without a PLE
    const config: ModelConfig = { ...PRESETS.tiny, mtp: false, ple: { ...PRESETS.tiny.ple, layerIds: [1, 3] } };
    const out = join(root, 'tiny-ple-on-qsa');
    await writeModelFolder({ config, seed: SEED, out, layout: 'hf', shards: 1, force: false });
    const text = readFileSync(join(out, 'config.json'), 'utf8');
    expect(JSON.parse(text).layer_types).toEqual(['linear_attention', 'linear_attention', 'linear_attention', 'hybrid_indexed']);
    expect(hfConfigProblems(text)).toEqual([]);
    expect(loadReport(out)).toEqual({ missing: [], unexpected: [], mismatched: [] });
    expect(resolveModelConfig(out)).toEqual({ ...config, name: out });
    const release = join(root, 'tiny-release');
    await writeModelFolder({ config: PRESETS.tiny, seed: SEED, out: release, layout: 'fp8-release', shards: 1, force: false });
    expect(JSON.parse(readFileSync(join(release, 'config.json'), 'utf8')).text_config.layer_types).toEqual([
      'linear_attention',
      'linear_attention',
      'linear_attention',
      'full_attention',
    ]);
  });

  it('the checker refuses what HF refuses: "full_attention", a float field written as an integer, a missing buffer', async () => {
    const text = readFileSync(join(root, 'tiny', 'config.json'), 'utf8');
    const json = JSON.parse(text);
    expect(
      hfConfigProblems(JSON.stringify({ ...json, layer_types: json.layer_types.map((t: string) => (t === 'linear_attention' ? t : 'full_attention')) })),
    ).toEqual(['Unsupported Qwen4-Exp layer types: ["full_attention"]']);
    expect(hfConfigProblems(JSON.stringify({ ...json, rms_norm_eps: 1 }))).toEqual(['rms_norm_eps: expected float, got int 1 (strict dataclass type check)']);
    expect(hfConfigProblems(JSON.stringify({ ...json, hc_count: 1 }))).toEqual(['Qwen4-Exp requires hc_count > 1, got 1']);
    expect(hfConfigProblems(JSON.stringify({ ...json, indexer_budget: 6 }))).toEqual(['indexer_budget must be divisible by indexer_compress_ratio']);
    const want = hfCheckpointTensors(text);
    expect(want.get('model.layers.1.ple.ple_embedding.ngram_heads_offsets')).toMatchObject({ dtype: 'I64', shape: [16] });
    expect([...want.keys()].filter((n) => n.includes('ngram_embedding.shard_'))).toHaveLength(PRESETS.tiny.ple.splitNgramParts);
  });

  it('hcsp reads the folder HF would save back (its diff config.json, the buffers) to the same outputs as the synthetic weights', async () => {
    const config = PRESETS.tiny;
    const out = join(root, 'tiny');
    const saved = hfSavedConfig(readFileSync(join(out, 'config.json'), 'utf8'));
    // to_diff_dict leaves out what equals HF's defaults
    expect(saved).not.toHaveProperty('hidden_act');
    expect(saved).toHaveProperty('number_of_conv_states', 3);
    writeFileSync(join(out, 'config.json'), JSON.stringify(saved, null, 2));
    expect(resolveModelConfig(out)).toEqual({ ...config, name: out });
    const c = openCheckpoint(out, resolveModelConfig(out));
    try {
      // the buffers are read (checked against the config), not reported unused
      expect(c.unused).toEqual([]);
      expect(await logitsAndH(config, c.source)).toEqual(await logitsAndH(config));
    } finally {
      c.source.close();
    }
  });
});
