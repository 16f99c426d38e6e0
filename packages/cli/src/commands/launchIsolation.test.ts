// `hcsp launch` among other processes (issue 21): nobody on the machine can break a job, and a
// job leaves nothing behind. Strangers' hellos at a running job's rendezvous store (a taken
// rank, the ranks still missing, a world of another size, no secret or a wrong one, a line
// without end), before and after the world is complete, and a second launch on the same port
// leave the job untouched: its ranks end with exit 0 and the in-process result. The job's
// secret is in no command line and no output. Every launch, ending well or not, leaves $TMPDIR
// as it found it; --rendezvous-timeout is a number of seconds a timer can wait.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newSecret } from '@hcsp/ranks';
import { describe, expect, it } from 'vitest';
import { expectSameRankedRun } from '../../../../test/support/rankedRuns.ts';
import { expectNothingLeft, freePort, hcspLines, isRank, marked, waitFor, type JobResult } from '../../../../test/support/launchJobs.ts';
import { inProcessPrefill, launchBundle, rankPrefillArgs, ROOT } from '../../../../test/support/launchSetup.ts';

const { bundle, launch } = launchBundle('launch-isolation');

/** a process's environment, as a map */
function environ(pid: number): Map<string, string> {
  return new Map(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter((e) => e.includes('='))
      .map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
}

/**
 * What any process on the machine can send to a job's store: each connection sends one thing
 * (`script`, once the store's challenge came) and must be closed by the store; resolves when
 * every connection is closed, with what the store sent them.
 */
async function strangers(port: number, scripts: ((s: Socket, nonce: string) => void)[]): Promise<string[]> {
  const heard: string[] = [];
  await Promise.all(
    scripts.map(
      (script) =>
        new Promise<void>((resolve) => {
          const s = connect({ host: '127.0.0.1', port });
          let buffered = '';
          let started = false;
          s.setEncoding('utf8');
          s.on('error', () => {});
          s.on('data', (c: string) => {
            buffered += c;
            const first = buffered.split('\n')[0];
            if (!started && buffered.includes('\n')) {
              started = true;
              script(s, JSON.parse(first).nonce);
            }
          });
          s.on('close', () => {
            heard.push(...buffered.split('\n').filter((l) => l !== ''));
            resolve();
          });
          // a store that never closes a stranger fails the test (its own bound), not the suite
          setTimeout(() => s.destroy(), 30_000).unref();
        }),
    ),
  );
  return heard;
}

const hello = (fields: Record<string, unknown>) => (s: Socket) =>
  s.write(`${JSON.stringify({ t: 'hello', magic: 'hcsp-rendezvous/2', host: 'stranger', pid: 4242, nonce: 'n', proof: '0'.repeat(64), ...fields })}\n`);
/** the hellos of issue 21: a taken or missing rank, a world of another size, no proof, a wrong one; old-protocol ones; a 40 MiB line without newline */
const attacks = (worldSize: number) => [
  hello({ rank: 0, worldSize }),
  hello({ rank: worldSize - 1, worldSize }),
  hello({ rank: 1, worldSize: 999 }),
  hello({ rank: 1, worldSize, proof: undefined }),
  (s: Socket) => s.write(`${JSON.stringify({ t: 'hello', magic: 'hcsp-rendezvous/1', rank: 0, worldSize, host: 'stranger', pid: 4242 })}\n`),
  (s: Socket) => s.write(`${JSON.stringify({ t: 'set', key: 'mpi/port', value: 'evil' })}\n`),
  (s: Socket) => s.write('x'.repeat(40 << 20)),
];

describe('hcsp launch: strangers at the rendezvous store leave a running job untouched', () => {
  it('--nnodes 2 with node 1 not started yet: strangers claim the missing ranks 2 and 3 and rank 0, with a bad world size, no or a wrong secret, a line without end; then node 1 joins and the job gives the in-process result', async () => {
    const port = await freePort();
    const env = { HCSP_RENDEZVOUS_SECRET: newSecret() };
    const node = (k: number) =>
      launch(['--nnodes', '2', '--node-rank', String(k), '--nproc-per-node', '2', '--master-port', String(port)], rankPrefillArgs({ tp: 4 }), env);
    const n0 = node(0);
    // rank 0's store is up, node 0's ranks are in it
    await waitFor('rank 0 serving the store', () => marked(n0.mark).filter(isRank).length === 2);
    // the store answers (a challenge) once it listens
    const deadline = Date.now() + 60_000;
    while ((await strangers(port, [(s) => s.destroy()])).length === 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
    }
    const heard = await strangers(port, [...attacks(4), hello({ rank: 2, worldSize: 4 }), hello({ rank: 3, worldSize: 4 })]);
    for (const line of heard) expect(JSON.parse(line).t, line).toMatch(/^(challenge|refused)$/);
    const n1 = node(1);
    const [r0, r1] = await Promise.all([n0.done, n1.done]);
    expect(r0.status, r0.stderr).toBe(0);
    expect(r1.status, r1.stderr).toBe(0);
    expect(hcspLines(r0.stderr + r1.stderr)).toEqual([]);
    expectSameRankedRun(JSON.parse(r0.stdout), await inProcessPrefill({ tp: 4 }), 4, 'launch');
    await expectNothingLeft(n0.mark);
    await expectNothingLeft(n1.mark);
  });

  it("after the world is complete (rank 1 held by SIGSTOP): strangers' hellos and a second launch on the same port change nothing; the second launch fails naming the port in use", async () => {
    const port = await freePort();
    const job = launch(['--nproc-per-node', '2', '--master-port', String(port)], rankPrefillArgs({ tp: 2 }));
    // rank 0 starts ompi-server once every rank is in the store
    await waitFor('the world complete (ompi-server started)', () => marked(job.mark).some((p) => p.cmd.startsWith('ompi-server')));
    const ranks = marked(job.mark).filter(isRank);
    const rank1 = ranks.find((p) => p.rank === '1')!;
    process.kill(rank1.pid, 'SIGSTOP');
    let second: JobResult | undefined;
    let secret: string | undefined;
    try {
      // the job's secret: in the ranks' environments alike, in no command line
      const envs = ranks.map((p) => environ(p.pid));
      secret = envs[0].get('HCSP_RENDEZVOUS_SECRET');
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(envs[1].get('HCSP_RENDEZVOUS_SECRET')).toBe(secret);
      for (const p of marked(job.mark)) expect(p.cmd).not.toContain(secret);
      // Open MPI's TCP traffic is kept to MASTER_ADDR's interface (127.0.0.1: the loopback)
      expect(envs[0].get('OMPI_MCA_oob_tcp_if_include')).toBe(envs[0].get('OMPI_MCA_btl_tcp_if_include'));
      expect(envs[0].get('OMPI_MCA_oob_tcp_if_include')).toBeDefined();
      const heard = await strangers(port, attacks(2));
      for (const line of heard) expect(JSON.parse(line).t, line).toMatch(/^(challenge|refused)$/);
      second = await launch(['--nproc-per-node', '2', '--master-port', String(port)], rankPrefillArgs({ tp: 2 })).done;
    } finally {
      process.kill(rank1.pid, 'SIGCONT');
    }
    expect(second!.status).toBe(1);
    const lines = hcspLines(second!.stderr);
    expect(lines).toContain(
      `hcsp: rank 0 cannot serve the rendezvous store: MASTER_PORT ${port} on 127.0.0.1 is in use (another job, or a second node started with --node-rank 0?): choose another --master-port`,
    );
    expect(lines).toContain(
      `hcsp: rank 1: the rendezvous store at 127.0.0.1:${port} refused this rank's HCSP_RENDEZVOUS_SECRET: the port serves another job, or this node's secret is not rank 0's node's`,
    );
    const r = await job.done;
    expect(r.status, r.stderr).toBe(0);
    expect(hcspLines(r.stderr)).toEqual([]);
    expect(r.stdout + r.stderr + second!.stdout + second!.stderr).not.toContain(secret);
    expectSameRankedRun(JSON.parse(r.stdout), await inProcessPrefill({ tp: 2 }), 2, 'launch');
    await expectNothingLeft(job.mark);
  });
});

describe('hcsp launch: a launch leaves $TMPDIR as it found it', () => {
  /** a private TMPDIR holding one file of the user's */
  function privateTmp(): string {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-launch-tmp-test-'));
    writeFileSync(join(dir, 'users-file'), 'mine');
    return dir;
  }
  const longArgs = ['prefill', '--backend', 'cpu', '--comm', 'mpi', '--config', 'small', '--tokens', '1024', '--tp', '2', '--sp', 'on', '--json', '--quiet'];

  it('after a run that succeeds, one whose rank is killed, and one whose launcher gets SIGTERM', async () => {
    const dir = privateTmp();
    try {
      const ok = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], rankPrefillArgs({ tp: 2 }), { TMPDIR: dir });
      expect((await ok.done).status).toBe(0);
      await expectNothingLeft(ok.mark);
      expect(readdirSync(dir)).toEqual(['users-file']);

      // killed once Open MPI runs (its helpers have written their session folders)
      const killed = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], longArgs, { TMPDIR: dir });
      const victim = await waitFor(
        'orted and rank 1',
        () => marked(killed.mark).some((p) => p.cmd.startsWith('orted')) && marked(killed.mark).find((p) => isRank(p) && p.rank === '1'),
      );
      await new Promise((r) => setTimeout(r, 1000));
      process.kill(victim.pid, 'SIGKILL');
      expect((await killed.done).status).toBe(128 + 9);
      await expectNothingLeft(killed.mark);
      expect(readdirSync(dir)).toEqual(['users-file']);

      const stopped = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], longArgs, { TMPDIR: dir });
      await waitFor('orted', () => marked(stopped.mark).some((p) => p.cmd.startsWith('orted')));
      await new Promise((r) => setTimeout(r, 1000));
      stopped.child.kill('SIGTERM');
      expect((await stopped.done).status).toBe(128 + 15);
      await expectNothingLeft(stopped.mark);
      expect(readdirSync(dir)).toEqual(['users-file']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('hcsp launch: its options', () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [bundle, 'launch', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, ...env } });

  it('--rendezvous-timeout: a positive number of seconds a timer can wait, else one usage error naming the value', () => {
    const cases: [string, string][] = [
      ['0', 'hcsp: --rendezvous-timeout is too small: at least 0.001 s, got "0"'],
      ['2147484', 'hcsp: --rendezvous-timeout is too large: at most 2147483.647 s (setTimeout\'s limit), got "2147484"'],
      ['99999999999999999999', 'hcsp: --rendezvous-timeout is too large: at most 2147483.647 s (setTimeout\'s limit), got "99999999999999999999"'],
      ['-1', 'hcsp: --rendezvous-timeout must be a positive number of seconds, at most 2147483.647 (setTimeout\'s limit), got "-1"'],
      ['1e3', 'hcsp: --rendezvous-timeout must be a positive number of seconds, at most 2147483.647 (setTimeout\'s limit), got "1e3"'],
      ['', 'hcsp: --rendezvous-timeout must be a positive number of seconds, at most 2147483.647 (setTimeout\'s limit), got ""'],
    ];
    for (const [value, message] of cases) {
      const r = run(['--nproc-per-node', '2', '--rendezvous-timeout', value, '--', ...rankPrefillArgs({ tp: 2 })]);
      expect(r.status, value).toBe(1);
      expect(r.stderr).toBe(`${message}\n`);
    }
  });

  it('the largest --rendezvous-timeout works (no timer overflow: no false timeout, no hang)', async () => {
    const r = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort()), '--rendezvous-timeout', '2147483'], rankPrefillArgs({ tp: 2 }))
      .done;
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toContain('TimeoutOverflowWarning');
  });

  it('--nnodes 2 needs HCSP_RENDEZVOUS_SECRET, the same on every node; a short one is refused without being printed', () => {
    const args = ['--nnodes', '2', '--nproc-per-node', '1', '--', ...rankPrefillArgs({ tp: 2 })];
    const none = run(args);
    expect(none.status).toBe(1);
    expect(none.stderr).toBe(
      'hcsp: --nnodes 2: the launchers of a job of several nodes must share its rendezvous secret: set HCSP_RENDEZVOUS_SECRET to the same value on every node (e.g. export HCSP_RENDEZVOUS_SECRET=$(openssl rand -hex 32))\n',
    );
    const short = run(args, { HCSP_RENDEZVOUS_SECRET: 'hunter2' });
    expect(short.status).toBe(1);
    expect(short.stderr).toBe(
      'hcsp: HCSP_RENDEZVOUS_SECRET has 7 characters: it needs 32 to 1024 (e.g. export HCSP_RENDEZVOUS_SECRET=$(openssl rand -hex 32), the same on every node)\n',
    );
  });
});
