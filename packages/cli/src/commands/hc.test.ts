import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { f32ToBf16, hcContractOf, runHcStep } from '@hcsp/core';
import type { HcStepOutputs, RoundingContract, Tensor } from '@hcsp/core';
import { openSafetensorsFile, writeSafetensorsFile } from '@hcsp/core/node';
import { HC_OUTPUT_NAMES, runHcCommand } from './hc.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'hcsp-hc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const T = 5;
const H = 8;
const R = 6;
const W = 4 * H;

/** Deterministic bf16 values in [-scale, scale), never zero (so -0 vs +0 cannot arise). */
function randomBf16(shape: number[], scale: number, seed: number): Tensor {
  let s = seed >>> 0;
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Uint16Array(n);
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = (s >>> 8) / 2 ** 24; // [0, 1)
    data[i] = f32ToBf16((u * 2 - 1) * scale || scale / 3);
  }
  return { dtype: 'bf16', shape, data };
}

function weights(): Record<string, Tensor> {
  return {
    h: randomBf16([T, W], 2, 1),
    'hc_norm.weight': randomBf16([W], 0.2, 2),
    'input_mix_weight_down.weight': randomBf16([R, W], 1 / Math.sqrt(W), 3),
    'block_inject_weight.weight': randomBf16([4, W], 1 / Math.sqrt(W), 4),
    'input_mix_weight_up.weight': randomBf16([W, R], 1 / Math.sqrt(R), 5),
  };
}

function pending(blockOut: Tensor): Record<string, Tensor> {
  return { block_out: blockOut, raw_prev: randomBf16([T, 4], 3, 7) };
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

// Asynchronous so that the cases (one CLI process each) run concurrently.
function hcsp(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'hc', ...args], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

let caseId = 0;
function writeInput(tensors: Record<string, Tensor>): { input: string; output: string } {
  caseId++;
  const input = join(dir, `in${caseId}.safetensors`);
  writeSafetensorsFile(input, tensors);
  return { input, output: join(dir, `out${caseId}.safetensors`) };
}

function readAll(path: string): { tensors: Map<string, Tensor>; metadata: Readonly<Record<string, string>> } {
  const f = openSafetensorsFile(path);
  try {
    return { tensors: new Map(f.names().map((n) => [n, f.read(n)])), metadata: f.metadata };
  } finally {
    f.close();
  }
}

function bits(t: Tensor): number[] {
  return [...(t.data as Uint16Array)];
}

/** Runs the CLI on `tensors` and checks its outputs against runHcStep called directly. */
async function runGood(tensors: Record<string, Tensor>, contract: RoundingContract): Promise<Map<string, Tensor>> {
  const { input, output } = writeInput(tensors);
  const r = await hcsp(['--in', input, '--out', output, '--contract', contract]);
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const { tensors: got, metadata } = readAll(output);
  expect(metadata).toMatchObject({ contract });

  const direct = runHcStep(
    {
      h: tensors.h,
      blockOut: tensors.block_out ?? null,
      rawPrev: tensors.raw_prev ?? null,
      normWeight: tensors['hc_norm.weight'],
      wDown: tensors['input_mix_weight_down.weight'],
      wInject: tensors['block_inject_weight.weight'],
      wUp: tensors['input_mix_weight_up.weight'],
    },
    { contract: hcContractOf(contract) },
  );
  const shapes: Record<keyof HcStepOutputs, number[]> = {
    hNew: [T, W],
    normed: [T, W],
    d: [T, R + 4],
    gate: [T, R],
    up: [T, W],
    mixed: [T, H],
    raw: [T, 4],
  };
  expect([...got.keys()].sort()).toEqual(Object.values(HC_OUTPUT_NAMES).sort());
  for (const key of Object.keys(HC_OUTPUT_NAMES) as (keyof HcStepOutputs)[]) {
    const t = got.get(HC_OUTPUT_NAMES[key])!;
    expect(t.dtype, key).toBe('bf16');
    expect(t.shape, key).toEqual(shapes[key]);
    expect(bits(t), key).toEqual(bits(direct[key]));
  }
  return got;
}

describe.concurrent('hcsp hc: good inputs', () => {
  it('without a pending combine: h_new is h bit for bit, outputs equal runHcStep', async () => {
    const w = weights();
    const got = await runGood(w, 'atom');
    expect(bits(got.get('h_new')!)).toEqual(bits(w.h));
    // the step really computed something: normed is not h
    expect(bits(got.get('normed')!)).not.toEqual(bits(w.h));
  });

  it('with a zero block_out the combine leaves h unchanged', async () => {
    const w = weights();
    const got = await runGood({ ...w, ...pending({ dtype: 'bf16', shape: [T, H], data: new Uint16Array(T * H) }) }, 'atom');
    expect(bits(got.get('h_new')!)).toEqual(bits(w.h));
  });

  it('with a pending combine and the hf contract: h_new moves, outputs equal runHcStep', async () => {
    const w = weights();
    const got = await runGood({ ...w, ...pending(randomBf16([T, H], 1, 9)) }, 'hf');
    expect(bits(got.get('h_new')!)).not.toEqual(bits(w.h));
  });

  it('the hf-eager contract rounds the HC step as hf (its eager points are in the sub-layers), not as atom', async () => {
    const w = { ...weights(), ...pending(randomBf16([T, H], 1, 9)) };
    const eager = await runGood(w, 'hf-eager');
    const atom = await runGood(w, 'atom');
    expect(bits(eager.get('h_new')!)).not.toEqual(bits(atom.get('h_new')!));
  });
});

/** Runs the CLI on a bad input: exit non-zero, one `hcsp:` line naming `mentions`, no output file. */
async function expectFailure(input: string, output: string, mentions: RegExp): Promise<void> {
  const r = await hcsp(['--in', input, '--out', output]);
  expect(r.status).not.toBe(0);
  expect(r.status).not.toBeNull();
  expect(r.stdout).toBe('');
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^hcsp: /);
  expect(lines[0]).toMatch(mentions);
  const base = output.slice(dir.length + 1);
  expect(readdirSync(dir).filter((f) => f.includes(base))).toEqual([]);
}

describe.concurrent('hcsp hc: bad inputs fail with the tensor named and no output left behind', () => {
  it('missing tensor', async () => {
    const w = weights();
    delete w['input_mix_weight_up.weight'];
    const { input, output } = writeInput(w);
    await expectFailure(input, output, /missing tensor 'input_mix_weight_up\.weight'/);
  });

  it('wrong shape', async () => {
    const { input, output } = writeInput({ ...weights(), 'block_inject_weight.weight': randomBf16([3, W], 0.1, 11) });
    await expectFailure(input, output, /tensor 'block_inject_weight\.weight': wrong shape: expected \[4,32\], got \[3,32\]/);
  });

  it('wrong dtype', async () => {
    const f32Norm: Tensor = { dtype: 'f32', shape: [W], data: new Float32Array(W).fill(0.5) };
    const { input, output } = writeInput({ ...weights(), 'hc_norm.weight': f32Norm });
    await expectFailure(input, output, /tensor 'hc_norm\.weight': wrong dtype: expected bf16, got f32/);
  });

  it('truncated file', async () => {
    const { input, output } = writeInput(weights());
    const f = openSafetensorsFile(input);
    const last = f.names().at(-1)!;
    f.close();
    writeFileSync(input, readFileSync(input).subarray(0, -10));
    await expectFailure(input, output, new RegExp(`truncated file: tensor '${last.replace(/\./g, '\\.')}' needs \\d+ bytes, the file has \\d+`));
  });

  it('malformed header: a tensor entry with an unknown dtype', async () => {
    const { input, output } = writeInput(weights());
    const bytes = readFileSync(input);
    const text = bytes.toString('latin1');
    const at = text.indexOf('"h":{"dtype":"BF16"');
    expect(at).toBeGreaterThan(0);
    bytes.write('"h":{"dtype":"BX16"', at, 'latin1');
    writeFileSync(input, bytes);
    await expectFailure(input, output, /malformed header: tensor 'h' has unknown dtype "BX16"/);
  });

  it('block_out without raw_prev', async () => {
    const { input, output } = writeInput({ ...weights(), block_out: randomBf16([T, H], 1, 13) });
    await expectFailure(input, output, /tensor 'block_out' is given without 'raw_prev'/);
  });
});

/** The same checks without a process (the CLI's one-line format is covered above): message and no output. */
async function expectFailureInProcess(input: string, output: string, mentions: RegExp): Promise<void> {
  await expect(runHcCommand({ in: input, out: output, contract: 'atom' })).rejects.toThrow(mentions);
  const base = output.slice(dir.length + 1);
  expect(readdirSync(dir).filter((f) => f.includes(base))).toEqual([]);
}

describe('hcsp hc: more bad inputs, checked in process', () => {
  it('missing h', async () => {
    const w = weights();
    delete w.h;
    const { input, output } = writeInput(w);
    await expectFailureInProcess(input, output, /missing tensor 'h'/);
  });

  it('h whose width is not 4*H', async () => {
    const { input, output } = writeInput({ ...weights(), h: randomBf16([T, W + 2], 1, 12) });
    await expectFailureInProcess(input, output, /tensor 'h': wrong shape: expected \[T, 4\*H\].*got \[5,34\]/);
  });

  it('malformed header: JSON that does not parse', async () => {
    const { input, output } = writeInput(weights());
    const bytes = readFileSync(input);
    bytes[8] = 0x5b; // '[' where '{' was: the JSON no longer parses
    writeFileSync(input, bytes);
    await expectFailureInProcess(input, output, /malformed header: not valid JSON/);
  });

  it('raw_prev without block_out', async () => {
    const { input, output } = writeInput({ ...weights(), raw_prev: randomBf16([T, 4], 1, 14) });
    await expectFailureInProcess(input, output, /tensor 'raw_prev' is given without 'block_out'/);
  });

  it('an input file that does not exist', async () => {
    await expectFailureInProcess(join(dir, 'nope.safetensors'), join(dir, 'out-nope.safetensors'), /nope\.safetensors/);
  });
});
