// The MPI communicator of host-device ranks (issue 13): real processes started by Open MPI's
// mpirun, each running test/support/mpiCollectivesChild.ts, whose collectives must equal
// core's simulated ones bit for bit and send the bytes core's accounting says.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMpiAddon, mpiAddonPath, mpirunRank, MpiUnavailableError } from './mpiCommunicator.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const CHILD = 'test/support/mpiCollectivesChild.ts';
/** each mpirun is bounded: a hang fails the test instead of stalling the suite */
const MPIRUN_TIMEOUT_MS = 120_000;

/** mpirun with Open MPI's permission to run as root (CI containers do), oversubscribing the cores */
function mpirun(np: number, args: string[], env: Record<string, string> = {}) {
  const t0 = performance.now();
  const r = spawnSync('mpirun', ['--oversubscribe', '-np', String(np), ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: MPIRUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, OMPI_ALLOW_RUN_AS_ROOT: '1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1', ...env },
  });
  if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT')
    throw new Error('mpirun is not installed: run `npm run setup:system` (Debian: openmpi-bin, libopenmpi-dev)');
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, seconds: (performance.now() - t0) / 1000 };
}

/** pids of live processes whose environment holds `entry` (a zombie is gone, only not yet reaped) */
function processesWith(entry: string): number[] {
  return readdirSync('/proc')
    .filter((d) => {
      try {
        return (
          /^\d+$/.test(d) && readFileSync(`/proc/${d}/environ`, 'utf8').split('\0').includes(entry) && !/\) Z /.test(readFileSync(`/proc/${d}/stat`, 'utf8'))
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON output, walked freely by the expectations
function lines(stdout: string): Record<string, any>[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

const saved = process.env.HCSP_MPI_ADDON;
afterEach(() => {
  if (saved === undefined) delete process.env.HCSP_MPI_ADDON;
  else process.env.HCSP_MPI_ADDON = saved;
});

describe('MPI addon loading', () => {
  it('a missing binary is a typed error naming the path, the build command and the MPI packages', () => {
    process.env.HCSP_MPI_ADDON = '/nonexistent/hcsp_mpi.node';
    expect(() => loadMpiAddon()).toThrow(MpiUnavailableError);
    expect(() => loadMpiAddon()).toThrow(
      'MPI addon unavailable at /nonexistent/hcsp_mpi.node: no such file. Build it with `npm run build:native`, which builds it where CMake finds MPI (Debian: libopenmpi-dev and openmpi-bin, `npm run setup:system`), or set HCSP_MPI_ADDON to a built hcsp_mpi.node',
    );
  });

  it('a broken binary fails its probe in a child process, not in this one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-mpi-'));
    const path = join(dir, 'hcsp_mpi.node');
    writeFileSync(path, 'not an ELF file');
    process.env.HCSP_MPI_ADDON = path;
    try {
      expect(() => loadMpiAddon()).toThrow(/MPI addon unavailable at .*hcsp_mpi\.node: it does not load \(.*\)\. Build it with `npm run build:native`/);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it('the built addon sits beside hcsp_native.node and names its MPI library before MPI starts', () => {
    delete process.env.HCSP_MPI_ADDON;
    expect(mpiAddonPath()).toMatch(/native\/build\/Release\/hcsp_mpi\.node$/);
    const v = loadMpiAddon().version();
    expect(v.library).toMatch(/Open MPI v\d/);
    expect(v.standard).toMatch(/^3\.\d$/);
  });

  it("reads Open MPI's rank variables, and none means not started by mpirun", () => {
    expect(mpirunRank({ OMPI_COMM_WORLD_RANK: '2', OMPI_COMM_WORLD_SIZE: '4', OMPI_COMM_WORLD_LOCAL_RANK: '0' })).toEqual({ rank: 2, size: 4, localRank: 0 });
    expect(mpirunRank({ OMPI_COMM_WORLD_RANK: '1', OMPI_COMM_WORLD_SIZE: '2' })).toEqual({ rank: 1, size: 2, localRank: 1 });
    expect(mpirunRank({})).toBeNull();
    expect(mpirunRank({ OMPI_COMM_WORLD_RANK: 'x', OMPI_COMM_WORLD_SIZE: '2' })).toBeNull();
  });
});

describe('MPI collectives across processes equal the simulated ones', () => {
  for (const [np, fold] of [
    [2, 'mpiOp'],
    [3, 'mpiOp'],
    [4, 'mpiOp'],
    [4, 'loop'],
  ] as const) {
    it(`${np} ranks, ordered folded by ${fold === 'mpiOp' ? 'the non-commutative MPI op' : 'the loop'}: every algorithm bit-exact, bytes as commBytes.ts`, () => {
      const r = mpirun(np, [process.execPath, '--import', 'tsx', CHILD, 'collectives', fold]);
      expect(r.stderr).not.toMatch(/Error/);
      expect(r.status, r.stderr).toBe(0);
      expect(r.seconds).toBeLessThan(90);
      const [out] = lines(r.stdout);
      expect(out.tp).toBe(np);
      expect(out.differing).toEqual([]);
      expect(out.differingPerRank).toEqual(new Array(np).fill(0));
      // the orders do differ on these inputs (tp 2: all three orders are one add)
      if (np > 2) expect(out.ordersDiffer).toBeGreaterThan(0);
      for (let c = 0; c < out.cases; c++) {
        const sent = out.sentPerRank.map((perCase: number[]) => perCase[c]);
        // commBytes.ts is the mean over ranks; the ranks' sum is exact
        expect(
          sent.reduce((a: number, b: number) => a + b, 0),
          `case ${c}`,
        ).toBeCloseTo(out.expected[c] * np, 6);
        if (out.even[c]) expect(sent, `case ${c}`).toEqual(new Array(np).fill(out.expected[c]));
      }
      expect(out.mismatch.name).toBe('MpiMismatchError');
      expect(out.mismatch.message).toMatch(
        /^ranks reached different collectives: rank 0 at node 900 allReduce ordered of 4 bf16 elements; rank 1 at node 900 allReduce ordered of 8 bf16 elements/,
      );
      expect(out.otherNode.message).toMatch(/rank 0 at node 901 allGather .*; rank 1 at node 902 allGather/);
      // a mismatch found together moves no data: the next collective works
      expect(out.afterMismatch).toEqual([...Array(np).keys()]);
      expect(out.control).toBeGreaterThan(0);
      // rank 0 waited about 600 ms for rank 1 at a collective, its event loop turning meanwhile
      expect(out.waitedMs).toBeGreaterThan(300);
      expect(out.ticks).toBeGreaterThan(out.waitedMs / 10 / 4);
    });
  }

  it('without the agreement check, different sizes fail inside MPI_Sendrecv on both ranks, typed and named, and later calls are refused', () => {
    const r = mpirun(2, [process.execPath, '--import', 'tsx', CHILD, 'truncate']);
    expect(r.status, r.stderr).toBe(0);
    const out = lines(r.stdout).sort((a, b) => a.rank - b.rank);
    expect(out).toHaveLength(2);
    expect(out[0].errs).toMatchObject({ name: 'MpiError', call: 'MPI_Sendrecv' });
    expect(out[0].errs.message).toMatch(
      /^rank 0 of 2: MPI_Sendrecv \(allGather ring step 1 of 1, 16 bytes to rank 1, 16 from rank 1\) received 8 bytes from rank 1, expected 16/,
    );
    expect(out[1].errs).toMatchObject({ name: 'MpiError', call: 'MPI_Sendrecv', mpiErrorClass: 'MPI_ERR_TRUNCATE' });
    expect(out[1].errs.message).toMatch(
      /^rank 1 of 2: MPI_Sendrecv failed \(allGather ring step 1 of 1, 8 bytes to rank 0, 8 from rank 0\): .*\(MPI_ERR_TRUNCATE\)$/,
    );
    for (const o of out) expect(o.refused).toMatch(/refused node 2 \(allGather test\.case2\): an earlier collective failed/);
  });
});

describe('the collective watchdog under mpirun: a rank that stops (SIGSTOP) ends the job, naming the call', () => {
  const WATCHDOG_CHILD = 'test/support/mpiWatchdogChild.ts';

  // the limit (3 s) also bounds MPI's start, whose exchange waits for the slowest rank to start: not less, on a busy machine
  it('a collective waiting on a stopped peer: the timer fires while MPI blocks a worker thread, and the job ends', () => {
    const mark = `HCSP_MPI_WATCHDOG_TEST=${process.pid}-collective`;
    const r = mpirun(2, [process.execPath, '--import', 'tsx', WATCHDOG_CHILD, 'collective', '3000'], { HCSP_MPI_WATCHDOG_TEST: mark.split('=')[1] });
    expect(r.status, r.stderr).toBe(3);
    const out = lines(r.stdout);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ rank: 0, what: 'node 2 (allReduce test.collective)' });
    expect(out[0].waitedMs).toBeGreaterThanOrEqual(2999);
    expect(out[0].waitedMs).toBeLessThan(8000);
    // the event loop turned while the all-reduce waited (10 ms ticks: 300 if none were late)
    expect(out[0].ticks).toBeGreaterThan(50);
    expect(r.seconds).toBeLessThan(30);
    expect(processesWith(mark)).toEqual([]);
  });

  it("MPI_Finalize waiting on a stopped peer (on the JavaScript thread): the addon's stall guard ends it, naming the call", () => {
    const mark = `HCSP_MPI_WATCHDOG_TEST=${process.pid}-finalize`;
    const r = mpirun(2, [process.execPath, '--import', 'tsx', WATCHDOG_CHILD, 'finalize', '3000'], { HCSP_MPI_WATCHDOG_TEST: mark.split('=')[1] });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(
      'hcsp: rank 0 of 2: MPI_Finalize made no progress for 3 s, the collective timeout (a peer stopped or hung?): ending this process\n',
    );
    expect(lines(r.stdout)).toEqual([]);
    expect(r.seconds).toBeLessThan(30);
    expect(processesWith(mark)).toEqual([]);
  });
});
