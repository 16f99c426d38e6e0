// `prefill --trace FILE.json` (issue 25): a Chrome trace with a track per rank, every collective
// a slice on each rank with the bytes it sends (the run summary's accounting), one flow through
// the ranks' slices of each collective; for simulated ranks at tp 2 and 4 and for a 2-rank
// `hcsp launch` job; a bad path fails before the run and leaves nothing behind.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript, run by node at `npm ci` (no types)
import { buildCli } from '../../scripts/build.mjs';
import { runPrefillCommand } from './prefill.ts';
import { newSecret } from '@hcsp/ranks';
import { expectNothingLeft, freePort, hcspLines, launch as launchJob } from '../../../../test/support/launchJobs.ts';
import type { ChromeTrace, TraceEvent } from '../trace/chromeTrace.ts';

const CLI = fileURLToPath(new URL('../..', import.meta.url));
const ROOT = join(CLI, '..', '..');
const outdir = join(CLI, 'dist', `test-trace-${process.pid}`);
const bundle = join(outdir, 'hcsp.js');
const dir = mkdtempSync(join(tmpdir(), 'hcsp-trace-'));
process.env.HCSP_RENDEZVOUS_SECRET = newSecret();

beforeAll(async () => {
  mkdirSync(outdir, { recursive: true });
  await buildCli({ outdir });
});
afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

/** `hcsp prefill` of the tiny model on simulated ranks (cpu, T 40, seed 3, SP on, ring), --json --quiet */
const SIM_RUN = { backend: 'cpu', config: 'tiny', tokens: '40', seed: '3', stack: 'model', json: true, quiet: true, sp: 'on', reduce: 'ring' };

type CommBytes = { allReduce: number; allGather: number; reduceScatter: number };

/** Checks the trace of a tp-rank run against its summary's bytes; returns the collective slices per rank. */
function checkTrace(path: string, tp: number, commBytesPerRank: CommBytes[]): Map<number, TraceEvent>[] {
  const trace = JSON.parse(readFileSync(path, 'utf8')) as ChromeTrace;
  expect(Array.isArray(trace.traceEvents)).toBe(true);
  const ev = trace.traceEvents;
  for (const e of ev) {
    expect(['X', 'M', 's', 't', 'f']).toContain(e.ph);
    expect(Number.isInteger(e.pid) && Number.isInteger(e.tid)).toBe(true);
    if (e.ph !== 'M') expect(Number.isFinite(e.ts)).toBe(true);
    if (e.ph === 'X') expect(e.dur! >= 0).toBe(true);
  }
  // one process track per rank, named
  const names = ev.filter((e) => e.ph === 'M' && e.name === 'process_name').map((e) => [e.pid, (e.args as { name: string }).name]);
  expect(names).toEqual([...Array(tp).keys()].map((r) => [r, `rank ${r}`]));
  const collectives = [...Array(tp).keys()].map(
    (r) => new Map(ev.filter((e) => e.ph === 'X' && e.cat === 'collective' && e.pid === r).map((e) => [(e.args as { node: number }).node, e])),
  );
  const nodes = [...Array(tp).keys()].map((r) => ev.filter((e) => e.ph === 'X' && e.cat === 'node' && e.pid === r));
  for (let r = 0; r < tp; r++) {
    expect(nodes[r].length).toBeGreaterThan(0);
    for (const n of nodes[r]) expect(n.args).toMatchObject({ op: n.name, inputs: expect.any(Array), outputs: expect.any(Array), bytesOut: expect.any(Number) });
    // the same collectives on every rank, in the same order
    expect([...collectives[r].keys()]).toEqual([...collectives[0].keys()]);
    const sent: CommBytes = { allReduce: 0, allGather: 0, reduceScatter: 0 };
    for (const c of collectives[r].values()) sent[c.name as keyof CommBytes] += (c.args as { bytesSent: number }).bytesSent;
    expect(sent).toEqual(commBytesPerRank[r]);
  }
  expect(collectives[0].size).toBeGreaterThan(0);
  // one flow per collective: 's' on rank 0, 't' on the middle ranks, 'f' on the last, each inside that rank's slice
  for (const id of collectives[0].keys()) {
    const flow = ev.filter((e) => ['s', 't', 'f'].includes(e.ph) && e.id === id).sort((a, b) => a.pid - b.pid);
    expect(flow.map((e) => [e.ph, e.pid])).toEqual([...Array(tp).keys()].map((r) => [r === 0 ? 's' : r === tp - 1 ? 'f' : 't', r]));
    for (const f of flow) {
      const slice = collectives[f.pid].get(id)!;
      expect(f.tid).toBe(slice.tid);
      expect(f.ts! >= slice.ts! && f.ts! <= slice.ts! + slice.dur!).toBe(true);
    }
  }
  return collectives;
}

describe('prefill --trace: simulated ranks', () => {
  for (const tp of [2, 4]) {
    it(`tp ${tp}, SP on: a track per rank, each collective on every rank with the summary's bytes, flows linking them`, async () => {
      const path = join(dir, `sim-${tp}.json`);
      const summary = JSON.parse(await runPrefillCommand({ ...SIM_RUN, tp: String(tp), trace: path }));
      expect(summary.trace).toBe(path);
      checkTrace(path, tp, summary.commBytesPerRank);
    }, 120_000);
  }

  it('a recorded replay (rocm, host device): one replay slice per rank, the nodes untimed and said to be', async () => {
    const path = join(dir, 'sim-replay.json');
    const summary = JSON.parse(await runPrefillCommand({ ...SIM_RUN, backend: 'rocm', device: 'host', tp: '2', trace: path }));
    expect(summary.engine[0].recorded).toBe(true);
    checkTrace(path, 2, summary.commBytesPerRank);
    const trace = JSON.parse(readFileSync(path, 'utf8')) as ChromeTrace;
    const runs = trace.traceEvents.filter((e) => e.cat === 'run');
    expect(runs.map((e) => [e.name, e.pid])).toEqual([
      ['recorded replay', 0],
      ['recorded replay', 1],
    ]);
    expect(runs[0].dur).toBeGreaterThan(0);
    const nodes = trace.traceEvents.filter((e) => e.ph === 'X' && e.cat !== 'run');
    for (const n of nodes) expect([n.ts, n.dur]).toEqual([runs[0].ts, 0]);
    expect(trace.otherData.time).toMatch(/^not measured: the run was one recorded replay/);
  }, 120_000);

  it('the text summary names the trace and how to open it, and states bytes in readable units', async () => {
    const path = join(dir, 'sim-text.json');
    const text = await runPrefillCommand({ ...SIM_RUN, json: false, tp: '2', trace: path });
    expect(text).toContain(`  trace: ${path} (a Chrome trace: open it in Perfetto's UI, ui.perfetto.dev, "Open trace file", or chrome://tracing)`);
    expect(text).toMatch(/^ {2}sent per rank: all-reduce 15\.0 KiB, all-gather 11\.0 KiB, reduce-scatter 5\.0 KiB \(--json: bytes\)$/m);
    expect(text).toMatch(/^ {2}HC rows per rank \(rows each rank ran through its HC combine-norms, summed over the forward; SP divides them\): 480, 480$/m);
  }, 120_000);

  it('a bad path: one error naming it, before the run, nothing written', async () => {
    const missing = join(dir, 'no-such-dir', 't.json');
    await expect(runPrefillCommand({ ...SIM_RUN, seed: '0', tp: '2', trace: missing })).rejects.toThrow(new RegExp(`^--trace ${missing}: `));
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    await expect(runPrefillCommand({ ...SIM_RUN, seed: '0', tp: '2', trace: dir })).rejects.toThrow(/^--trace .*director/);
    expect(readdirSync(dir).filter((f) => !f.startsWith('sim-'))).toEqual([]);
    await expect(runPrefillCommand({ ...SIM_RUN, seed: '0', tp: '2', trace: '-' })).rejects.toThrow(/^--trace -: the trace is a file/);
  });
});

describe('prefill --trace: a 2-rank hcsp launch job', () => {
  it('rank 0 writes both ranks: the same collectives on both, flows linking them, the bytes each rank sent', async () => {
    const path = join(dir, 'launch.json');
    const job = launchJob(
      bundle,
      ROOT,
      ['--nproc-per-node', '2', '--master-port', String(await freePort())],
      [
        'prefill',
        '--backend',
        'cpu',
        '--comm',
        'mpi',
        '--config',
        'tiny',
        '--tokens',
        '40',
        '--seed',
        '3',
        '--tp',
        '2',
        '--sp',
        'on',
        '--json',
        '--quiet',
        '--trace',
        path,
      ],
    );
    const r = await job.done;
    expect(r.status, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout);
    const collectives = checkTrace(path, 2, summary.commBytesPerRank);
    // each rank timed its own part: the slices of one collective stand at each rank's own times
    const [first] = collectives[0].keys();
    expect(collectives[0].get(first)!.args).toMatchObject({ op: collectives[1].get(first)!.name });
    await expectNothingLeft(job.mark);
  }, 180_000);

  it('a bad path: rank 0 says so before the run, the job ends, nothing written, no process left', async () => {
    const bad = join(dir, 'no-such-dir', 'launch.json');
    const job = launchJob(
      bundle,
      ROOT,
      ['--nproc-per-node', '2', '--master-port', String(await freePort())],
      ['prefill', '--backend', 'cpu', '--comm', 'mpi', '--config', 'tiny', '--tokens', '40', '--tp', '2', '--json', '--quiet', '--trace', bad],
    );
    const r = await job.done;
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(hcspLines(r.stderr).filter((l) => l.includes('--trace'))).toEqual([expect.stringMatching(new RegExp(`^hcsp: rank 0 of 2: --trace ${bad}: `))]);
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    await expectNothingLeft(job.mark);
  }, 180_000);
});
