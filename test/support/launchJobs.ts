// `hcsp launch` jobs for tests: one launcher (one "node") of the compiled CLI, its processes
// marked by an environment variable so that a test can find its ranks, and any process left
// behind; bounded in time (a hang kills everything carrying the mark and fails the test).
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { expect } from 'vitest';

/** one job is bounded: a hang fails the test instead of stalling the suite */
export const JOB_TIMEOUT_MS = 120_000;

export interface JobResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  seconds: number;
}

export interface Job {
  child: ChildProcess;
  mark: string;
  /** the launcher process ended (its output pipes may stay open while processes it started hold them) */
  exited: Promise<void>;
  done: Promise<JobResult>;
}

let jobs = 0;

/** a TCP port free right now (the kernel's pick) */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** the processes (pid, command line, RANK) carrying a job's mark: its launcher, its ranks and whatever they started */
export function marked(mark: string): { pid: number; cmd: string; rank: string | null }[] {
  const out: { pid: number; cmd: string; rank: string | null }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const env = readFileSync(`/proc/${d}/environ`, 'utf8').split('\0');
      if (!env.includes(`HCSP_LAUNCH_TEST_MARK=${mark}`)) continue;
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (/\) Z /.test(stat)) continue; // a zombie is gone, only not yet reaped
      const rank = env.find((e) => e.startsWith('RANK='))?.slice(5) ?? null;
      out.push({ pid: Number(d), cmd: readFileSync(`/proc/${d}/cmdline`, 'utf8').replaceAll('\0', ' '), rank });
    } catch {
      // it ended while we looked
    }
  }
  return out;
}

/** a rank process (not its launcher, not what it started) */
export const isRank = (p: { cmd: string; rank: string | null }): boolean => p.rank !== null && p.cmd.includes('hcsp.js prefill ');

/**
 * Starts `node bundle launch ...launchArgs -- ...rankArgs` in `cwd`; `env`: more of the
 * launcher's environment (its ranks inherit it).
 */
export function launch(bundle: string, cwd: string, launchArgs: string[], rankArgs: string[], env: Record<string, string> = {}): Job {
  const mark = `hcsp-launch-test-${process.pid}-${jobs++}`;
  const t0 = performance.now();
  const child = spawn(process.execPath, [bundle, 'launch', ...launchArgs, '--', ...rankArgs], {
    cwd,
    env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1', HCSP_LAUNCH_TEST_MARK: mark, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const timer = setTimeout(() => {
    child.kill('SIGKILL');
    for (const p of marked(mark)) process.kill(p.pid, 'SIGKILL');
  }, JOB_TIMEOUT_MS);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const done = new Promise<JobResult>((resolve) =>
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, seconds: (performance.now() - t0) / 1000 });
    }),
  );
  return { child, mark, exited, done };
}

/**
 * No process of the job is left within `ms`: the ranks are gone when the launcher is, and Open
 * MPI's singleton helpers (orted, in sessions of their own) end by themselves once their rank
 * has (its death pipe), a moment later.
 */
export async function expectNothingLeft(mark: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (marked(mark).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  expect(marked(mark)).toEqual([]);
}

export async function waitFor<T>(what: string, fn: () => T | null | undefined | false, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** the lines hcsp and its launcher wrote (not Open MPI's) */
export const hcspLines = (stderr: string): string[] => stderr.split('\n').filter((l) => l.startsWith('hcsp'));
