// What `prefill` writes besides its summary: the --dump file never replaces a file the run
// reads (checkpoint shards, index, config.json, --config, --ids), `--dump -` owns stdout,
// and a checkpoint's unused tensors are one warning line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODEL_SUB_LAYERS, modelWeightSpecs, SyntheticWeightSource, TINY } from '@hcsp/core';
import { writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPrefillCommand } from './prefill.ts';
import { writeModelFolder } from './weights.ts';

const base = { backend: 'cpu', config: 'tiny', tp: '2', tokens: '8', sp: 'off', reduce: 'ring', seed: '0', stack: 'model', json: true, quiet: true };
const dir = mkdtempSync(join(tmpdir(), 'hcsp-prefill-outputs-'));
const folder = join(dir, 'm');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
beforeAll(async () => {
  await writeModelFolder({ config: TINY, seed: 0, out: folder, layout: 'hf', shards: 2, force: false });
});

function cli(args: string[]) {
  return spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'prefill', ...args], { encoding: 'latin1' });
}

describe('prefill --dump never replaces an input', () => {
  const shard = () => join(folder, 'model-00001-of-00002.safetensors');
  const cases: [string, () => Partial<typeof base> & { weights?: string; ids?: string; dump: string }][] = [
    ['a shard of the --weights folder', () => ({ config: folder, weights: folder, dump: shard() })],
    ['the index of the --weights folder', () => ({ weights: folder, dump: join(folder, 'model.safetensors.index.json') })],
    ["the --weights folder's config.json", () => ({ weights: folder, dump: join(folder, 'config.json') })],
    ['the --config file', () => ({ config: join(folder, 'config.json'), dump: join(folder, 'config.json') })],
    ["the --config folder's config.json", () => ({ config: folder, dump: join(folder, 'config.json') })],
  ];
  for (const [what, opts] of cases) {
    it(`refuses ${what}, before running, and leaves it as it was`, async () => {
      const o = opts();
      const before = readFileSync(o.dump);
      await expect(runPrefillCommand({ ...base, ...o })).rejects.toThrow(/--dump .*: is the same file as the input/);
      expect(readFileSync(o.dump).equals(before)).toBe(true);
    });
  }

  it('an empty --dump path is an error, not "no dump"', async () => {
    await expect(runPrefillCommand({ ...base, dump: '' })).rejects.toThrow(/--dump : empty path/);
  });
});

describe('prefill streams', () => {
  it('--dump - writes only the safetensors to stdout; the summary goes to stderr', () => {
    const r = cli(['--config', 'tiny', '--tp', '2', '--tokens', '8', '--quiet', '--dump', '-']);
    expect(r.status).toBe(0);
    const out = Buffer.from(r.stdout, 'latin1');
    const headerLength = Number(out.readBigUInt64LE(0));
    const header = JSON.parse(out.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, { data_offsets?: [number, number] }>;
    const end = Math.max(...Object.values(header).map((t) => t.data_offsets?.[1] ?? 0));
    expect(out.length).toBe(8 + headerLength + end);
    expect(r.stderr).toMatch(/^prefill tiny/m);
  });

  it("a checkpoint's unused tensors are one line that says warning once", () => {
    const specs = modelWeightSpecs(TINY, MODEL_SUB_LAYERS);
    const w = new SyntheticWeightSource(specs, 0);
    const extra = join(dir, 'extra');
    mkdirSync(extra);
    const tensors = new Map(specs.map((s) => [s.name, w.tensor(s.name)]));
    tensors.set('model.visual.patch_embed.proj.weight', { dtype: 'bf16', shape: [2], data: new Uint16Array(2) });
    writeSafetensorsFile(join(extra, 'model.safetensors'), tensors);
    const r = cli(['--config', 'tiny', '--tp', '2', '--tokens', '8', '--quiet', '--json', '--weights', extra]);
    expect(r.status).toBe(0);
    expect(r.stderr.trim().split('\n')).toEqual([
      `hcsp: warning: ${extra}: 1 checkpoint tensor is not used by the model: model.visual.patch_embed.proj.weight`,
    ]);
  });
});
