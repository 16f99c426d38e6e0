// The set-up the `hcsp launch` tests share: the compiled CLI, built for the test file into a
// folder of its own before its tests and removed after them; launchers of it; the ranks'
// prefill (the host device over MPI, tiny, 40 tokens, ordered sums); and the same prefill with
// every rank in this process, which a launched job must equal.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
// @ts-expect-error: plain JavaScript, run by node at `npm ci` (no types)
import { buildCli } from '../../packages/cli/scripts/build.mjs';
import { runPrefillCommand } from '../../packages/cli/src/commands/prefill.ts';
import { launch, type Job } from './launchJobs.ts';

/** the repository, where the jobs run */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface LaunchBundle {
  /** the bundle's folder (a test may keep its own files there: removed with it) */
  outdir: string;
  /** its hcsp.js */
  bundle: string;
  /** one launcher (one "node") of this bundle in ROOT; `env`: more of its environment */
  launch(launchArgs: string[], rankArgs: string[], env?: Record<string, string>): Job;
}

/** Builds the CLI into packages/cli/dist/test-`name`-<pid> before the calling file's tests, and removes it after them. */
export function launchBundle(name: string): LaunchBundle {
  const outdir = join(ROOT, 'packages', 'cli', 'dist', `test-${name}-${process.pid}`);
  const bundle = join(outdir, 'hcsp.js');
  beforeAll(async () => {
    mkdirSync(outdir, { recursive: true });
    await buildCli({ outdir });
  });
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));
  return { outdir, bundle, launch: (launchArgs, rankArgs, env = {}) => launch(bundle, ROOT, launchArgs, rankArgs, env) };
}

/** The run both sides make: tp ranks, SP on or off (default on), the seed (default 3). */
export interface RankedPrefill {
  tp: number;
  sp?: string;
  seed?: number;
}

/** A rank's `prefill` arguments (--comm mpi) for `hcsp launch ... -- `. */
export function rankPrefillArgs(o: RankedPrefill): string[] {
  const { tp, sp = 'on', seed = 3 } = o;
  return [
    'prefill',
    '--backend',
    'rocm',
    '--device',
    'host',
    '--comm',
    'mpi',
    '--reduce',
    'ordered',
    '--config',
    'tiny',
    '--tokens',
    '40',
    '--seed',
    String(seed),
    '--tp',
    String(tp),
    '--sp',
    sp,
    '--json',
    '--quiet',
  ];
}

/** The same prefill with every rank in this process (--comm sim), its JSON summary parsed; `more`: further options (e.g. weights). */
export async function inProcessPrefill(o: RankedPrefill, more: Record<string, string> = {}) {
  const { tp, sp = 'on', seed = 3 } = o;
  const summary = await runPrefillCommand({
    backend: 'rocm',
    device: 'host',
    config: 'tiny',
    tokens: '40',
    seed: String(seed),
    stack: 'model',
    json: true,
    quiet: true,
    tp: String(tp),
    sp,
    reduce: 'ordered',
    ...more,
  });
  return JSON.parse(summary);
}
