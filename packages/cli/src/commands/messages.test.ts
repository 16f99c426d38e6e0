// The messages the issue found wanting (item 7), each as the user meets it.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import {
  f32ToBf16,
  MODEL_SUB_LAYERS,
  modelWeightSpecs,
  SP_MIN_TOKENS_ENV,
  STAND_IN_SUB_LAYERS,
  SyntheticWeightSource,
  TINY,
  type Tensor,
  type WeightSpec,
} from '@hcsp/core';
import { writeSafetensorsFile } from '@hcsp/core/node';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { PROBLEMS_SHOWN } from '../checkpoint/weightProblems.ts';
import { runHcCommand } from './hc.ts';
import { planFromOptions, registerPlan } from './plan.ts';
import { registerPrefill, runPrefillCommand } from './prefill.ts';

const dir = mkdtempSync(join(tmpdir(), 'hcsp-messages-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

const prefill = { backend: 'cpu', config: 'tiny', tp: '2', tokens: '16', sp: 'auto', reduce: 'ring', seed: '3', stack: 'model', json: true, quiet: true };
const tinySpecs = modelWeightSpecs(TINY, MODEL_SUB_LAYERS);

/** The tiny config's synthetic checkpoint as a file, with `edit` applied to its tensors. */
function tinyCheckpoint(name: string, edit: (t: Map<string, Tensor>) => void = () => {}, specs: WeightSpec[] = tinySpecs): string {
  const synthetic = new SyntheticWeightSource(specs, 3);
  const tensors = new Map(specs.map((s) => [s.name, synthetic.tensor(s.name)]));
  edit(tensors);
  const path = join(dir, name);
  writeSafetensorsFile(path, tensors);
  return path;
}

describe('a checkpoint for another config', () => {
  it('is summarized: the count by kind, the first few, and the file with the full list', async () => {
    const file = tinyCheckpoint('tiny.safetensors');
    const err = (await runPrefillCommand({ ...prefill, config: 'small', tp: '4', weights: file }).catch((e: Error) => e)) as Error;
    const m = /^(.+): does not fit config 'small' \(model stack\): (\d+) tensor problems \((.+)\), first 3: (.+); the full list is in (\S+)$/.exec(err.message);
    expect(m, err.message).not.toBeNull();
    const [, label, count, kinds, shown, listFile] = m!;
    expect(label).toBe(file);
    expect(Number(count)).toBeGreaterThan(100);
    // small has 8 layers, tiny 4: layers 4..7 are missing; the shared names all differ in shape
    const byKind = Object.fromEntries(kinds.split(', ').map((k) => [k.replace(/^\d+ /, ''), Number(k.split(' ')[0])]));
    expect(Object.keys(byKind).sort()).toEqual(['missing', 'wrong shape']);
    expect(byKind.missing + byKind['wrong shape']).toBe(Number(count));
    expect(shown.split('; ')).toHaveLength(PROBLEMS_SHOWN);
    expect(err.message.length).toBeLessThan(1000);
    const listed = readFileSync(listFile, 'utf8').trimEnd().split('\n');
    expect(listed).toHaveLength(1 + Number(count));
    expect(listed.slice(1, 1 + PROBLEMS_SHOWN).join('; ')).toBe(shown);
  });

  it('a few problems are all listed in the message', async () => {
    const file = tinyCheckpoint('partial.safetensors', (t) => t.delete('model.embed_tokens.weight'));
    await expect(runPrefillCommand({ ...prefill, weights: file })).rejects.toThrow(
      `${file}: does not fit config 'tiny' (model stack): 1 tensor problem (1 missing): missing tensor 'model.embed_tokens.weight'`,
    );
  });
});

describe('file errors name the path', () => {
  it('a directory given as an hc input (EISDIR), or as a checkpoint folder without shards', async () => {
    const d = join(dir, 'a-directory');
    mkdirSync(d);
    // a folder is a model folder for --weights (issue 10); an empty one names what is missing
    await expect(runPrefillCommand({ ...prefill, weights: d })).rejects.toThrow(
      `${d}: the model folder has no .safetensors files and no model.safetensors.index.json`,
    );
    await expect(runHcCommand({ in: d, out: join(dir, 'o.safetensors'), contract: 'atom' })).rejects.toThrow(`${d}: is a directory, not a .safetensors file`);
  });
});

describe('configs and integers', () => {
  it("Object.prototype's names are unknown configs like any other", async () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const known = `unknown config '${name}': not a preset (flash-next, small, tiny), a config.json file or a model folder`;
      expect(() => planFromOptions({ tokens: '8', tp: '1', capturing: false, mtp: false, json: true, config: name }, {})).toThrow(known);
      await expect(runPrefillCommand({ ...prefill, config: name })).rejects.toThrow(known);
    }
  });

  it('a too-large integer is "too large", not "must be an integer"', async () => {
    await expect(runPrefillCommand({ ...prefill, tokens: '99999999999999999999' })).rejects.toThrow(
      '--tokens is too large: at most 2147483647, got "99999999999999999999"',
    );
  });
});

describe('messages that name the problem (issue 21)', () => {
  it("T of 2^52 is beyond --tokens's bound; the largest T allowed meets the memory guard, not a graph shape error", async () => {
    await expect(runPrefillCommand({ ...prefill, tokens: String(2 ** 52) })).rejects.toThrow(`--tokens is too large: at most 2147483647, got "${2 ** 52}"`);
    await expect(runPrefillCommand({ ...prefill, tokens: '2147483647' })).rejects.toThrow(
      /^prefill of tiny at tp 2 with T 2147483647 needs about .* nothing was allocated/,
    );
  });

  it('--ids: a literal beyond float64 (1e400) is said so, not "null"; deep nesting names the file', async () => {
    const huge = join(dir, 'huge-ids.json');
    writeFileSync(huge, '[1, 2, 1e400]');
    await expect(runPrefillCommand({ ...prefill, ids: huge })).rejects.toThrow(
      `--ids ${huge}: token 2 is a number beyond the float64 range, not an integer in [0, ${TINY.vocabSize})`,
    );
    const deep = join(dir, 'deep-ids.json');
    writeFileSync(deep, '['.repeat(20_000) + ']'.repeat(20_000));
    await expect(runPrefillCommand({ ...prefill, ids: deep })).rejects.toThrow(
      `--ids ${deep}: nests arrays and objects more than 64 levels deep (at character 64)`,
    );
    const nested = join(dir, 'nested-ids.json');
    writeFileSync(nested, '[[1], "abc"]');
    await expect(runPrefillCommand({ ...prefill, ids: nested })).rejects.toThrow(
      `--ids ${nested}: token 0 is an array, not an integer in [0, ${TINY.vocabSize})`,
    );
  });

  it('a symbolic link loop is said so, not "does not exist"', async () => {
    const a = join(dir, 'loop-a');
    const b = join(dir, 'loop-b');
    symlinkSync(b, a);
    symlinkSync(a, b);
    const loop = 'ELOOP: symbolic link loop (too many levels of symbolic links)';
    await expect(runPrefillCommand({ ...prefill, weights: a })).rejects.toThrow(`${a}: ${loop}`);
    await expect(runPrefillCommand({ ...prefill, ids: a })).rejects.toThrow(`--ids ${a}: ${loop}`);
    await expect(runPrefillCommand({ ...prefill, config: a })).rejects.toThrow(`${a}: ${loop}`);
  });
});

describe('NaN and Inf in inputs and weights', () => {
  const NAN = 0x7fc0;
  const INF = 0x7f80;

  it('checkpoint weights: a warning naming the tensor, recorded in the summary with the weights file', async () => {
    // the HC-only stack: its ops carry a NaN through (the model's QSA indexer refuses one)
    const hcOnly = { ...prefill, stack: 'hc-only' };
    const specs = modelWeightSpecs(TINY, STAND_IN_SUB_LAYERS);
    const poisoned = specs.find((s) => s.dtype === 'bf16' && s.shape.length === 2)!.name;
    const file = tinyCheckpoint(
      'nan.safetensors',
      (t) => {
        const w = t.get(poisoned)!;
        (w.data as Uint16Array)[0] = NAN;
        (w.data as Uint16Array)[1] = INF;
      },
      specs,
    );
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const summary = JSON.parse(await runPrefillCommand({ ...hcOnly, weights: file }));
    expect(summary.weights).toBe(resolve(file));
    expect(summary.nonFiniteWeights).toEqual({ [poisoned]: { nan: 1, inf: 1 } });
    expect(stderr).toHaveBeenCalledWith(`hcsp: warning: ${file}: tensor '${poisoned}' holds 1 NaN and 1 Inf\n`);
    await expect(runPrefillCommand({ ...hcOnly, weights: file, rejectNonfinite: true })).rejects.toThrow(`tensor '${poisoned}' holds 1 NaN and 1 Inf`);
  });

  it('synthetic weights are recorded as such', async () => {
    const summary = JSON.parse(await runPrefillCommand(prefill));
    expect(summary.weights).toBe('synthetic (seed 3)');
    expect(summary.nonFiniteWeights).toEqual({});
  });

  it('hc inputs: a warning per tensor, or a refusal with --reject-nonfinite', async () => {
    const bf = (shape: number[], fill: number): Tensor => ({
      dtype: 'bf16',
      shape,
      data: new Uint16Array(shape.reduce((a, b) => a * b, 1)).fill(f32ToBf16(fill)),
    });
    const h = bf([2, 16], 1);
    (h.data as Uint16Array)[3] = NAN;
    const input = join(dir, 'hc-nan.safetensors');
    writeSafetensorsFile(input, {
      h,
      'hc_norm.weight': bf([16], 1),
      'input_mix_weight_down.weight': bf([2, 16], 0.1),
      'block_inject_weight.weight': bf([4, 16], 0.1),
      'input_mix_weight_up.weight': bf([16, 2], 0.1),
    });
    const run = await runHcCommand({ in: input, out: join(dir, 'hc-nan-out.safetensors'), contract: 'atom' });
    expect(run.warnings).toEqual([`${input}: tensor 'h' holds 1 NaN`]);
    await expect(runHcCommand({ in: input, out: join(dir, 'hc-nan-out2.safetensors'), contract: 'atom', rejectNonfinite: true })).rejects.toThrow(
      `${input}: tensor 'h' holds 1 NaN; refused by --reject-nonfinite`,
    );
  });
});

describe('plan and prefill defaults', () => {
  function help(name: 'plan' | 'prefill'): string {
    const program = new Command('hcsp');
    let out = '';
    program.configureOutput({ writeOut: (s) => (out += s) });
    registerPlan(program);
    registerPrefill(program);
    program.commands.find((c) => c.name() === name)!.outputHelp();
    return out;
  }

  it('are the same config and tp, stated in --help, which also names the variable', () => {
    for (const name of ['plan', 'prefill'] as const) {
      const text = help(name).replace(/\s+/g, ' ');
      expect(text, name).toMatch(
        /--config <name> model configuration: a preset \(flash-next, the production model; small; tiny\) or a Hugging Face config\.json or model folder \(default: small\)/,
      );
      expect(text, name).toMatch(/--tp <\w+> tensor-parallel size, a positive integer dividing the head counts \(default: 4\)/);
      expect(text, name).toContain(`Environment: ${SP_MIN_TOKENS_ENV} token floor of the sequence-parallel gate`);
    }
  });
});
