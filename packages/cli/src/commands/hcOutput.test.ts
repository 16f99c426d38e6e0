// `hcsp hc --out`: what it may replace (run as root, where permissions stop nothing), and
// what a signal during the write leaves behind. Each case has its own temp dir; the only
// non-regular files are a fifo and links made here.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bufferByteSource, f32ToBf16, readSafetensorsHeader, type Tensor } from '@hcsp/core';
import { writeSafetensorsFile } from '@hcsp/core/node';
import { runHcCommand } from './hc.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'hcsp-hc-out-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
function caseDir(): string {
  const d = join(root, String(n++));
  execFileSync('mkdir', [d]);
  return d;
}

function bf16(shape: number[], seed: number, scale = 1): Tensor {
  let s = seed >>> 0;
  const data = new Uint16Array(shape.reduce((a, b) => a * b, 1));
  for (let i = 0; i < data.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    data[i] = f32ToBf16((((s >>> 8) / 2 ** 24) * 2 - 1) * scale || scale / 3);
  }
  return { dtype: 'bf16', shape, data };
}

/** A valid hc input of T rows, hidden size H, rank r. */
function inputFile(dir: string, T = 5, H = 8, r = 6): string {
  const path = join(dir, 'in.safetensors');
  writeSafetensorsFile(path, {
    h: bf16([T, 4 * H], 1, 2),
    'hc_norm.weight': bf16([4 * H], 2, 0.2),
    'input_mix_weight_down.weight': bf16([r, 4 * H], 3, 1 / Math.sqrt(4 * H)),
    'block_inject_weight.weight': bf16([4, 4 * H], 4, 1 / Math.sqrt(4 * H)),
    'input_mix_weight_up.weight': bf16([4 * H, r], 5, 1 / Math.sqrt(r)),
  });
  return path;
}

const tensorNames = (bytes: Buffer): string[] => readSafetensorsHeader(bufferByteSource(new Uint8Array(bytes)), 'out').entries.map((e) => e.name);

const run = (input: string, out: string) => runHcCommand({ in: input, out, contract: 'atom' });

describe('hc --out: only a regular file, never the input', () => {
  it('a fifo is refused and stays a fifo; nothing else appears', async () => {
    const d = caseDir();
    const input = inputFile(d);
    execFileSync('mkfifo', [join(d, 'fifo')]);
    await expect(run(input, join(d, 'fifo'))).rejects.toThrow(`--out ${join(d, 'fifo')}: is a fifo, not a regular file; to write to standard output use \`-\``);
    expect(lstatSync(join(d, 'fifo')).isFIFO()).toBe(true);
    expect(readdirSync(d).sort()).toEqual(['fifo', 'in.safetensors']);
  });

  it('the input itself, dir/./in and a link to it are refused before anything is read; the input is unchanged', async () => {
    const d = caseDir();
    const input = inputFile(d);
    const before = readFileSync(input);
    symlinkSync(input, join(d, 'alias.safetensors'));
    for (const out of [input, `${d}/./in.safetensors`, join(d, 'alias.safetensors')]) {
      await expect(run(input, out), out).rejects.toThrow(/is the same file as the input .*in\.safetensors; writing it would replace the input$/);
    }
    expect(readFileSync(input).equals(before)).toBe(true);
  });

  it('an existing output keeps its mode; a symlinked output stays a link to the new file', async () => {
    const d = caseDir();
    const input = inputFile(d);
    writeFileSync(join(d, 'out.safetensors'), 'old');
    chmodSync(join(d, 'out.safetensors'), 0o600);
    symlinkSync(join(d, 'out.safetensors'), join(d, 'link.safetensors'));
    await run(input, join(d, 'link.safetensors'));
    expect(lstatSync(join(d, 'link.safetensors')).isSymbolicLink()).toBe(true);
    expect(statSync(join(d, 'out.safetensors')).mode & 0o7777).toBe(0o600);
    expect(tensorNames(readFileSync(join(d, 'out.safetensors')))).toContain('h_new');
  });

  it('a missing output directory is named, not the hidden temp file', async () => {
    const d = caseDir();
    const out = join(d, 'no', 'such', 'out.safetensors');
    const err = await run(inputFile(d), out).catch((e: Error) => e);
    expect((err as Error).message).toBe(`--out ${out}: directory ${join(d, 'no', 'such')} does not exist`);
  });

  it('- writes the tensors to standard output and the summary to stderr', () => {
    const d = caseDir();
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'hc', '--in', inputFile(d), '--out', '-'], { cwd: ROOT });
    expect(r.stderr.toString()).toBe('wrote standard output: T 5, H 8, r 6, contract atom\n');
    expect(r.status).toBe(0);
    expect(tensorNames(r.stdout).sort()).toEqual(['d', 'gate', 'h_new', 'mixed', 'normed', 'raw', 'up']);
    expect(readdirSync(d)).toEqual(['in.safetensors']);
  });
});

/**
 * Starts `hcsp hc` writing a ~24 MB output and delivers `signal` while the temp file exists:
 * the child is stopped (SIGSTOP) the moment the file appears, signalled, then continued.
 */
function interruptWrite(signal: 'SIGINT' | 'SIGTERM'): Promise<{ status: number | null; stderr: string; left: string[] }> {
  const d = caseDir();
  const input = inputFile(d, 2048, 512, 4);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/main.ts', 'hc', '--in', input, '--out', join(d, 'out.safetensors')], {
      cwd: ROOT,
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    let signalled = false;
    const watcher = watch(d, (_event, name) => {
      if (signalled || !name || !/^\.out\.safetensors\.hcsp-tmp-.+-\d+-[0-9a-f]{16}$/.test(String(name))) return;
      signalled = true;
      child.kill('SIGSTOP');
      child.kill(signal);
      child.kill('SIGCONT');
    });
    child.on('error', reject);
    child.on('close', (status) => {
      watcher.close();
      resolve({ status, stderr, left: readdirSync(d) });
    });
  });
}

describe('a signal while hc writes its output', () => {
  for (const [signal, status] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: the temp file is removed, nothing replaced, "interrupted by ${signal}", exit ${status}`, async () => {
      const r = await interruptWrite(signal);
      expect(r.stderr).toBe(`hcsp: interrupted by ${signal}\n`);
      expect(r.status).toBe(status);
      expect(r.left).toEqual(['in.safetensors']);
    });
  }
});
