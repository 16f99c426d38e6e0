// `hcsp prefill --comm mpi` (issue 13, host ranks): the compiled CLI started by Open MPI's
// mpirun, one process per rank, gives the in-process run's results bit for bit, each rank
// sending the bytes the simulated accounting gives it; start-up failures end every rank with
// one clear message, each run's time bounded.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript, run by node at `npm ci` (no types)
import { buildCli } from '../../scripts/build.mjs';
import { runPrefillCommand } from './prefill.ts';
import { expectSameRankedRun } from '../../../../test/support/rankedRuns.ts';

const CLI = fileURLToPath(new URL('../..', import.meta.url));
const ROOT = join(CLI, '..', '..');
// Under dist/ (git-ignored), so that the bundle's external packages resolve from the
// repository's node_modules; built from the current sources, as `npm run build` builds dist/hcsp.js.
const outdir = join(CLI, 'dist', `test-mpi-${process.pid}`);
const bundle = join(outdir, 'hcsp.js');
/** one mpirun is bounded: a hang fails the test instead of stalling the suite */
const MPIRUN_TIMEOUT_MS = 120_000;

beforeAll(async () => {
  mkdirSync(outdir, { recursive: true });
  await buildCli({ outdir });
});
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

/** mpirun of the bundle (MPMD when `apps` has several argument lists, one rank each), with Open MPI's permission to run as root (CI runs as root) */
function mpirun(np: number, apps: string[][]) {
  return mpirunRaw(
    apps.length === 1
      ? ['-np', String(np), process.execPath, bundle, ...apps[0]]
      : apps.flatMap((a, i) => [...(i ? [':'] : []), '-np', '1', process.execPath, bundle, ...a]),
  );
}

function mpirunRaw(mpiArgs: string[]) {
  const t0 = performance.now();
  const r = spawnSync('mpirun', ['--oversubscribe', ...mpiArgs], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: MPIRUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1' },
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new Error('mpirun is not installed: run `npm run setup:system` (Debian: openmpi-bin, libopenmpi-dev)');
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', seconds: (performance.now() - t0) / 1000 };
}

const base = { config: 'tiny', tokens: '40', seed: '3', stack: 'model', json: true, quiet: true };
const flags = (o: { backend: string; tp: number; sp: string; reduce: string }) => [
  'prefill',
  '--backend',
  o.backend,
  ...(o.backend === 'rocm' ? ['--device', 'host'] : []),
  '--config',
  'tiny',
  '--tokens',
  '40',
  '--seed',
  '3',
  '--tp',
  String(o.tp),
  '--sp',
  o.sp,
  '--reduce',
  o.reduce,
  '--json',
  '--quiet',
];

/** `args` with `flag`'s value replaced (a flag given twice is refused before any rank meets) */
const withFlag = (args: string[], flag: string, value: string): string[] => args.map((a, i) => (i > 0 && args[i - 1] === flag ? value : a));

function inProcess(o: { backend: string; tp: number; sp: string; reduce: string }) {
  return runPrefillCommand({
    ...base,
    backend: o.backend,
    ...(o.backend === 'rocm' ? { device: 'host' } : {}),
    tp: String(o.tp),
    sp: o.sp,
    reduce: o.reduce,
  }).then((s) => JSON.parse(s));
}

describe('hcsp prefill --comm mpi: one process per rank under mpirun equals the in-process run', () => {
  const runs: { backend: string; tp: number; sp: string; reduce: string }[] = [];
  for (const tp of [2, 4]) for (const sp of ['on', 'off']) runs.push({ backend: 'rocm', tp, sp, reduce: 'ordered' });
  for (const reduce of ['ring', 'oneshot']) runs.push({ backend: 'rocm', tp: 4, sp: 'on', reduce });
  runs.push({ backend: 'rocm', tp: 2, sp: 'off', reduce: 'ring' });
  runs.push({ backend: 'cpu', tp: 2, sp: 'on', reduce: 'ordered' });
  for (const o of runs) {
    it(`--backend ${o.backend} --tp ${o.tp} --sp ${o.sp} --reduce ${o.reduce}: same outputSha256, logits, MTP state; each rank sent the accounted bytes`, async () => {
      const r = mpirun(o.tp, [[...flags(o), '--comm', 'mpi']]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.seconds).toBeLessThan(90);
      // only rank 0 prints, one JSON object
      const out = r.stdout.trim().split('\n');
      expect(out).toHaveLength(1);
      const mpi = JSON.parse(out[0]);
      expectSameRankedRun(mpi, await inProcess(o), o.tp, 'mpirun');
      if (o.sp === 'on') expect(mpi.commBytesPerRank[1].reduceScatter).toBeGreaterThan(0);
    });
  }

  it("--dump writes the in-process run's golden dump, byte for byte (every dumped value is rank 0's)", () => {
    const dir = join(outdir, 'dump');
    mkdirSync(dir, { recursive: true });
    const o = { backend: 'rocm', tp: 2, sp: 'on', reduce: 'ordered' };
    const r = mpirun(2, [[...flags(o), '--comm', 'mpi', '--dump', join(dir, 'mpi.safetensors')]]);
    expect(r.status, r.stderr).toBe(0);
    const sim = spawnSync(process.execPath, [bundle, ...flags(o), '--dump', join(dir, 'sim.safetensors')], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: MPIRUN_TIMEOUT_MS,
    });
    expect(sim.status, sim.stderr).toBe(0);
    const sha = (f: string) =>
      createHash('sha256')
        .update(readFileSync(join(dir, f)))
        .digest('hex');
    expect(sha('mpi.safetensors')).toBe(sha('sim.safetensors'));
  });
});

describe('hcsp prefill --comm mpi: start-up failures end every rank, reported once', () => {
  const o = { backend: 'rocm', tp: 4, sp: 'on', reduce: 'ordered' };
  /** the lines hcsp wrote (mpirun adds its own banner about the exit status) */
  const hcspLines = (stderr: string) => stderr.split('\n').filter((l) => l.startsWith('hcsp:'));

  it('a rank count that does not match --tp is one clear error, and every rank exits', () => {
    const r = mpirun(2, [[...flags(o), '--comm', 'mpi']]);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(hcspLines(r.stderr)).toEqual(['hcsp: --comm mpi: --tp 4 does not match the MPI world size 2: start one process per rank (mpirun -np 4 ...)']);
    expect(r.seconds).toBeLessThan(60);
  });

  it('without mpirun, --comm mpi is a world of one rank: --tp 4 is refused, --tp 1 runs', async () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OMPI_') && !k.startsWith('PMIX_')));
    const alone = (tp: number) =>
      spawnSync(process.execPath, [bundle, ...flags({ ...o, tp }), '--comm', 'mpi'], { cwd: ROOT, encoding: 'utf8', env, timeout: MPIRUN_TIMEOUT_MS });
    const four = alone(4);
    expect(four.status).toBe(1);
    expect(four.stderr).toBe(
      'hcsp: --comm mpi: this process was started neither by hcsp launch (RANK is unset) nor by mpirun (OMPI_COMM_WORLD_SIZE is unset), so its world is 1 rank, but --tp is 4: ' +
        'start it as hcsp launch --nproc-per-node 4 -- prefill ... --comm mpi (or mpirun -np 4 hcsp prefill ... --comm mpi)\n',
    );
    const one = alone(1);
    expect(one.status, one.stderr).toBe(0);
    expectSameRankedRun(JSON.parse(one.stdout), await inProcess({ ...o, tp: 1 }), 1, 'alone');
  });

  it('ranks that plan different graphs (here: different --tokens) refuse together before any collective, naming each digest', () => {
    const args = [...flags({ ...o, tp: 2 }), '--comm', 'mpi'];
    const r = mpirun(2, [args, withFlag(args, '--tokens', '41')]);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    const lines = hcspLines(r.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^hcsp: --comm mpi: the ranks planned different graphs \(digests of the graph and its feeds: rank 0: [0-9a-f]{12}, rank 1: [0-9a-f]{12}\); every rank needs the same command line and inputs$/,
    );
    expect(r.seconds).toBeLessThan(60);
  });

  it('a rank that fails before the run reports itself, rank 0 names it, and no rank waits', () => {
    const args = [...flags({ ...o, tp: 2 }), '--comm', 'mpi'];
    const r = mpirun(2, [args, withFlag(args, '--sp', 'maybe')]);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(hcspLines(r.stderr).sort()).toEqual([
      'hcsp: --comm mpi: rank 1 of 2 failed before the run (see its message)',
      "hcsp: rank 1 of 2: --sp must be one of auto|on|off, got 'maybe'",
    ]);
    expect(r.seconds).toBeLessThan(60);
  });

  it('a rank that fails after the start-up agreement is named, and the job ends (MPI_Abort) instead of its peer waiting at a collective', () => {
    const r = mpirunRaw(['-np', '2', process.execPath, '--import', 'tsx', 'test/support/prefillRankFailChild.ts']);
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(hcspLines(r.stderr)).toEqual(['hcsp: rank 1 of 2: injected failure after the start-up agreement']);
    // (Open MPI's own "MPI_ABORT was invoked" banner is not printed every time: not checked)
    expect(r.seconds).toBeLessThan(60);
  });

  it("a backend that cannot run a rank's part is refused on every rank, once", () => {
    const r = mpirun(2, [['prefill', '--backend', 'webgpu', '--config', 'tiny', '--tokens', '40', '--tp', '2', '--comm', 'mpi', '--quiet']]);
    expect(r.status).not.toBe(0);
    expect(hcspLines(r.stderr)).toEqual(["hcsp: --comm mpi runs a rank's part on --backend cpu or rocm, not --backend webgpu"]);
  });
});
