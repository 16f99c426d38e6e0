import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bf16ToF32,
  CpuBackend,
  f32ToBf16,
  fp8ToF32,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  preparePrefill,
  PRESETS,
  runOnce,
  sliceTensor,
  SyntheticWeightSource,
  type ModelConfig,
  type Tensor,
  type WeightInfo,
  type WeightSource,
} from '@hcsp/core';
import { openCheckpoint, resolveModelConfig, SafetensorsWeightSource } from '@hcsp/core/node';
import { afterAll, describe, expect, it } from 'vitest';
import { markTempFolder, tempPathFor } from '../output/tempFiles.ts';
import { runWeightsCommand, writeModelFolder, type WeightsLayout } from './weights.ts';

const root = mkdtempSync(join(tmpdir(), 'hcsp-weights-cmd-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const SEED = 5;

/** The first element where two tensors' data differ, or -1: a fast bitwise comparison of large arrays. */
function firstDifference(a: Tensor['data'], b: Tensor['data']): number {
  const x = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const y = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  if (x.equals(y)) return -1;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return a.length;
}

const isExpertStack = (name: string) => /\.mlp\.experts\.(gate_up_proj|down_proj)$/.test(name);
const isTableShard = (name: string) => /\.ngram_embedding\.shard_\d+\.weight$/.test(name);
const released = (name: string) => (name.startsWith('model.') ? `model.language_model.${name.slice(6)}` : name);

/**
 * What the loader must serve for a quantized tensor, computed here from the file's raw FP8
 * bytes and scales: block scales w = bf(fl(q * s)) (one 128 x 128 block covers each tiny and
 * small expert matrix), the table's global scale w = bf(q * bf(s)).
 */
function expectedDequantized(raw: SafetensorsWeightSource, name: string, shape: readonly number[]): Promise<Uint16Array> {
  const bf = f32ToBf16;
  return (async () => {
    if (isTableShard(name)) {
      const q = (await raw.read(released(name))).data as Uint8Array;
      const table = name.replace(/\.shard_\d+\.weight$/, '');
      const s = bf16ToF32(bf(((await raw.read(released(`${table}.weight_scale`))).data as Float32Array)[0]));
      return Uint16Array.from(q, (b) => bf(fp8ToF32(b, 'e4m3fn') * s));
    }
    const [E, rows, cols] = shape;
    const parts = name.endsWith('gate_up_proj') ? ['gate_proj', 'up_proj'] : ['down_proj'];
    const group = name.replace(/\.(gate_up_proj|down_proj)$/, '');
    const out = new Uint16Array(E * rows * cols);
    let o = 0;
    for (let e = 0; e < E; e++) {
      for (const part of parts) {
        const q = (await raw.read(released(`${group}.${e}.${part}.weight`))).data as Uint8Array;
        const s = (await raw.read(released(`${group}.${e}.${part}.weight_scale_inv`))).data as Float32Array;
        expect(s.length).toBe(1);
        for (const b of q) out[o++] = bf(Math.fround(fp8ToF32(b, 'e4m3fn') * s[0]));
      }
    }
    return out;
  })();
}

/** A source serving fixed tensors (the dequantized weights), the rest from the synthetic source. */
function overlay(base: SyntheticWeightSource, fixed: Map<string, Tensor>): WeightSource {
  return {
    has: (n) => base.has(n),
    info: (n): WeightInfo => base.info(n),
    read: async (n, slice) => {
      const t = fixed.get(n);
      if (!t) return base.read(n, slice);
      return slice ? sliceTensor(t, slice) : t;
    },
  };
}

describe('hcsp weights: round trip through a model folder', () => {
  for (const name of ['tiny', 'small']) {
    for (const layout of ['hf', 'fp8-release'] as WeightsLayout[]) {
      it(`${name}, ${layout}: config.json round-trips, and every tensor loads as written`, async () => {
        const config = PRESETS[name];
        const out = join(root, `${name}-${layout}`);
        const shards = 3;
        const summary = await writeModelFolder({ config, seed: SEED, out, layout, shards, force: false });
        expect(readdirSync(out).sort()).toEqual([
          'config.json',
          'model-00001-of-00003.safetensors',
          'model-00002-of-00003.safetensors',
          'model-00003-of-00003.safetensors',
          'model.safetensors.index.json',
        ]);
        const index = JSON.parse(readFileSync(join(out, 'model.safetensors.index.json'), 'utf8'));
        expect(Object.keys(index.weight_map)).toHaveLength(summary.tensors);
        expect(index.metadata.total_size).toBe(summary.bytes);
        expect(resolveModelConfig(out)).toEqual({ ...config, name: out });

        const specs = modelWeightSpecs(config, MODEL_SUB_LAYERS);
        const synthetic = new SyntheticWeightSource(specs, SEED);
        const c = openCheckpoint(out, resolveModelConfig(out));
        expect(c.unused).toEqual([]);
        const raw = SafetensorsWeightSource.open(join(out, 'model.safetensors.index.json'));
        try {
          let quantized = 0;
          for (const s of specs) {
            const got = await c.source.read(s.name);
            const want = synthetic.tensor(s.name);
            expect(got.shape).toEqual(want.shape);
            if (layout === 'hf' || !(isExpertStack(s.name) || isTableShard(s.name))) {
              expect(firstDifference(got.data, want.data), s.name).toBe(-1);
              continue;
            }
            quantized++;
            const deq = await expectedDequantized(raw, s.name, s.shape);
            expect(firstDifference(got.data, deq), s.name).toBe(-1);
            // and FP8 is FP8 of the synthetic values: within half an e4m3 step (2^-4
            // relative, or 2^-10 s below the normals) plus the bf16 rounding of w'
            const w = want.data as Uint16Array;
            const far = w.findIndex((v, i) => {
              const [a, b] = [bf16ToF32(v), bf16ToF32(deq[i])];
              return Math.abs(a - b) > Math.abs(a) * 2 ** -4 + Math.abs(b) * 2 ** -8 + 2 ** -12;
            });
            expect(far, s.name).toBe(-1);
          }
          if (layout === 'fp8-release')
            expect(quantized).toBe(2 * config.numLayers + (config.mtp ? 2 : 0) + config.ple.splitNgramParts * config.ple.layerIds.length);
          expect(c.conversions.length).toBe(layout === 'hf' ? 0 : 2);
        } finally {
          raw.close();
          c.source.close();
        }
      });
    }
  }

  it('tiny: a prefill on the folder equals the synthetic prefill (hf), and the dequantized one (fp8-release)', async () => {
    const config: ModelConfig = PRESETS.tiny;
    const run = async (weights?: WeightSource) => {
      const p = preparePrefill({ config, tokens: 24, tp: 2, sp: 'off', reduce: 'ring', seed: SEED, subLayers: MODEL_SUB_LAYERS, weights });
      const r = await runOnce(new CpuBackend(), p.graph, p.feeds, p.weights, { keep: [p.outputs.h] });
      return r.values.get(p.outputs.h)!.data;
    };
    const synthetic = await run();
    const hf = openCheckpoint(join(root, 'tiny-hf'), config);
    expect(await run(hf.source)).toEqual(synthetic);
    hf.source.close();

    const folder = join(root, 'tiny-fp8-release');
    const fp8 = openCheckpoint(folder, config);
    const raw = SafetensorsWeightSource.open(join(folder, 'model.safetensors.index.json'));
    const specs = modelWeightSpecs(config, MODEL_SUB_LAYERS);
    const fixed = new Map<string, Tensor>();
    for (const s of specs) {
      if (isExpertStack(s.name) || isTableShard(s.name))
        fixed.set(s.name, { dtype: 'bf16', shape: s.shape, data: await expectedDequantized(raw, s.name, s.shape) });
    }
    raw.close();
    const dequantized = await run(overlay(new SyntheticWeightSource(specs, SEED), fixed));
    expect(await run(fp8.source)).toEqual(dequantized);
    expect(dequantized).not.toEqual(synthetic);
    fp8.source.close();
  });
});

describe('hcsp weights: the output folder', () => {
  const base = { config: 'tiny', seed: '1', layout: 'hf', shards: '1' };

  it('writes into a new or empty folder, refuses a non-empty one unless --force, and replaces it atomically', async () => {
    const out = join(root, 'target');
    expect(await runWeightsCommand({ ...base, out })).toMatch(
      new RegExp(`^wrote ${out}: \\d+ tensors, \\d+ bytes in 1 shard \\(layout hf, config tiny, seed 1\\)\\n$`),
    );
    await expect(runWeightsCommand({ ...base, out })).rejects.toThrow(`--out ${out} is not empty (--force replaces it)`);
    writeFileSync(join(out, 'stale.txt'), 'x');
    await runWeightsCommand({ ...base, out, shards: '2', force: true });
    expect(readdirSync(out).sort()).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
    ]);
    const empty = join(root, 'empty');
    mkdirSync(empty);
    await runWeightsCommand({ ...base, out: empty });
    expect(existsSync(join(empty, 'config.json'))).toBe(true);
    // no temporaries left beside them
    expect(readdirSync(root).filter((f) => f.startsWith('.'))).toEqual([]);
  });

  it('bad options fail before anything is written', async () => {
    const out = join(root, 'never');
    await expect(runWeightsCommand({ ...base, out, layout: 'gguf' })).rejects.toThrow('--layout must be hf or fp8-release or ptpc-fp8, got "gguf"');
    await expect(runWeightsCommand({ ...base, out, shards: '0' })).rejects.toThrow(/--shards is too small: at least 1/);
    await expect(runWeightsCommand({ ...base, out, shards: '100000' })).rejects.toThrow(/--shards is too large/);
    await expect(runWeightsCommand({ ...base, out, shards: '5000' })).rejects.toThrow(/--shards 5000 exceeds the \d+ tensor groups to write/);
    await expect(runWeightsCommand({ ...base, out, seed: '-1' })).rejects.toThrow(/--seed must be an integer/);
    await expect(runWeightsCommand({ ...base, out, config: 'huge' })).rejects.toThrow(/unknown config 'huge'/);
    await expect(runWeightsCommand({ ...base, out, config: 'flash-next' })).rejects.toThrow(
      /tensor '.*' has \d+ elements; the synthetic generator holds a tensor whole/,
    );
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    await expect(runWeightsCommand({ ...base, out: file })).rejects.toThrow(`--out ${file} exists and is not a folder`);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(root).filter((f) => f.startsWith('.'))).toEqual([]);
  });
});

describe('hcsp weights: what it touches next to --out', () => {
  const base = { config: 'tiny', seed: '1', layout: 'hf', shards: '1' };
  // pid 2^22 + 1 is above Linux's PID_MAX_LIMIT (2^22): no process can have it
  const DEAD = 4194305;
  const here = { host: hostname(), pid: DEAD };

  it("sweeps only its own stale temporaries: a user's look-alike names, another host's and forged ones survive", async () => {
    const d = mkdtempSync(join(root, 'sweep-'));
    const m = join(d, 'm');
    // the user's own files, named like the old sweep's pattern
    const thesis = join(d, `.thesis.old-${DEAD}-draft2`);
    mkdirSync(thesis);
    writeFileSync(join(thesis, 'chapter1.tex'), 'mine');
    writeFileSync(join(d, `.notes.tmp-${DEAD}-v1`), 'mine');
    // hcsp's temporaries from another host sharing the folder (NFS): its pids mean nothing here
    const otherHost = tempPathFor(m, 'tmp', { host: `not-${hostname()}`, pid: DEAD });
    mkdirSync(otherHost);
    markTempFolder(otherHost);
    writeFileSync(tempPathFor(join(d, 'x.bin'), 'tmp', { host: `not-${hostname()}`, pid: DEAD }), 'theirs');
    // this host's name format with a wrong check, and a folder without the marker
    const real = tempPathFor(m, 'tmp', here);
    const forged = real.slice(0, -8) + (real.endsWith('00000000') ? '11111111' : '00000000');
    mkdirSync(forged);
    markTempFolder(forged);
    const unmarked = tempPathFor(m, 'old', here);
    mkdirSync(unmarked);
    // what a dead hcsp left: a marked folder and a temp file of `--out FILE`
    const staleFolder = tempPathFor(m, 'tmp', here);
    mkdirSync(staleFolder);
    markTempFolder(staleFolder);
    writeFileSync(join(staleFolder, 'model-00001-of-00001.safetensors'), 'partial');
    const staleFile = tempPathFor(join(d, 'x.bin'), 'tmp', here);
    writeFileSync(staleFile, 'partial');
    const kept = readdirSync(d).filter((f) => ![basename(staleFolder), basename(staleFile)].includes(f));

    await runWeightsCommand({ ...base, out: m });
    expect(readdirSync(d).sort()).toEqual([...kept, 'm'].sort());
    expect(readFileSync(join(thesis, 'chapter1.tex'), 'utf8')).toBe('mine');
  });

  it('refuses a symbolic link as --out, even with --force: the link and its target stay as they were', async () => {
    const d = mkdtempSync(join(root, 'link-'));
    const target = join(d, 'real');
    mkdirSync(target);
    writeFileSync(join(target, 'keep'), 'k');
    const link = join(d, 'link');
    symlinkSync(target, link);
    await expect(runWeightsCommand({ ...base, out: link, force: true })).rejects.toThrow(
      `--out ${link} is a symbolic link (to ${target}); give the folder itself`,
    );
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readdirSync(target)).toEqual(['keep']);
    expect(readdirSync(d).sort()).toEqual(['link', 'real']);
  });

  // A read-only file system needs a mount: a private mount namespace (unshare -rm) where the system allows one.
  const canMount = spawnSync('unshare', ['-rm', 'true']).status === 0;
  it.skipIf(!canMount)(
    'on a read-only file system: one line naming --out and the read-only file system',
    () => {
      const d = mkdtempSync(join(root, 'ro-'));
      const out = join(d, 'm');
      const main = resolve(dirname(fileURLToPath(import.meta.url)), '../main.ts');
      const script = `mount -t tmpfs -o ro none "$1" && exec "$2" --import tsx "$3" weights --config tiny --out "$4"`;
      const r = spawnSync('unshare', ['-rm', 'sh', '-c', script, 'sh', d, process.execPath, main, out], { encoding: 'utf8', timeout: 60_000 });
      expect(r.stderr).toBe(`hcsp: --out ${out}: cannot write the folder: ${d} is on a read-only file system\n`);
      expect(r.status).toBe(1);
    },
    70_000,
  );
});
