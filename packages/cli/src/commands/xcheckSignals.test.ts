// `hcsp xcheck` interrupted while its CPU SPECs compute (on the JavaScript thread): the
// signal is honoured within a second (exit 128 + its number, "interrupted by SIGINT"), and
// no report is written, not even in part.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const dir = mkdtempSync(join(tmpdir(), 'hcsp-xcheck-signals-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// After the signal: the most it may take, and how long the test waits before SIGKILL.
const HONOURED_MS = 1000;
const GIVE_UP_MS = 8000;

interface Interrupted {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** from the signal to the process's exit */
  ms: number;
}

/**
 * Starts xcheck on a run of tens of seconds (small config, two CPU SPECs) and sends `signal`
 * once its first progress line says the CPU reference is computing.
 */
function interruptXcheck(signal: NodeJS.Signals, report: string): Promise<Interrupted> {
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'packages/cli/src/main.ts',
        'xcheck',
        '--config',
        'small',
        '--tokens',
        '1100',
        '--tp',
        '4',
        '--compare',
        'cpu:sp=off,cpu:sp=on',
        '--report',
        report,
      ],
      { cwd: ROOT },
    );
    let stdout = '';
    let stderr = '';
    let sent = 0;
    let giveUp: NodeJS.Timeout | undefined;
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => {
      stderr += s;
      if (sent || !/xcheck cpu:sp=off: \d+\/\d+ ops/.test(stderr)) return;
      sent = performance.now();
      child.kill(signal);
      giveUp = setTimeout(() => child.kill('SIGKILL'), GIVE_UP_MS);
    });
    // never more than a minute in all, whatever happens
    const limit = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', fail);
    child.on('close', (status, sig) => {
      clearTimeout(giveUp);
      clearTimeout(limit);
      done({ status, signal: sig, stdout, stderr, ms: sent ? performance.now() - sent : Infinity });
    });
  });
}

describe('a signal while xcheck computes on the CPU reference', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: ends within a second, "interrupted by ${signal}", exit ${code}, no report`, async () => {
      const report = join(dir, signal);
      const r = await interruptXcheck(signal, report);
      expect(r.stderr).toMatch(new RegExp(`\\nhcsp: interrupted by ${signal}\\n$`));
      expect(r.status).toBe(code);
      expect(r.ms).toBeLessThan(HONOURED_MS);
      expect(r.stdout).toBe('');
      expect(existsSync(report)).toBe(false);
    }, 90_000);
  }
});
