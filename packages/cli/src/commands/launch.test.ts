// `hcsp launch` (issue 13): the compiled CLI's launcher starts one process per rank with
// torchrun's environment; the ranks meet at rank 0's rendezvous store and join one MPI world.
// The runs equal the in-process ones bit for bit (each rank sending the simulated accounting's
// bytes), on one "node" and on two (two launchers on loopback), and the faults real clusters
// have end every rank within a bounded time with a message naming the cause, leaving no
// process behind.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newSecret } from '@hcsp/ranks';
import { describe, expect, it } from 'vitest';
import { expectSameRankedRun } from '../../../../test/support/rankedRuns.ts';
import { expectNothingLeft, freePort, hcspLines, isRank, JOB_TIMEOUT_MS, marked, waitFor } from '../../../../test/support/launchJobs.ts';
import { inProcessPrefill, launchBundle, rankPrefillArgs, ROOT } from '../../../../test/support/launchSetup.ts';

// the launchers of a job of several nodes, and ranks started by hand, share the job's secret:
// every launcher and rank here inherits this one (a launcher alone makes its own: launchIsolation.test.ts)
process.env.HCSP_RENDEZVOUS_SECRET = newSecret();

const { outdir, bundle, launch } = launchBundle('launch');

describe("hcsp launch: one process per rank, met at rank 0's rendezvous, equals the in-process run", () => {
  for (const tp of [2, 4]) {
    for (const sp of ['on', 'off']) {
      it(`--nproc-per-node ${tp} -- prefill --comm mpi --reduce ordered --tp ${tp} --sp ${sp}: same outputSha256 and the accounted bytes per rank`, async () => {
        const job = launch(['--nproc-per-node', String(tp), '--master-port', String(await freePort())], rankPrefillArgs({ tp, sp }));
        const r = await job.done;
        expect(r.status, r.stderr).toBe(0);
        // only rank 0 prints: one JSON object
        const out = r.stdout.trim().split('\n');
        expect(out).toHaveLength(1);
        expectSameRankedRun(JSON.parse(out[0]), await inProcessPrefill({ tp, sp }), tp, 'launch');
        await expectNothingLeft(job.mark);
      });
    }
  }

  it("with a checkpoint, each rank reads only its part's slices: the same output, less than the whole run reads", async () => {
    const dir = join(outdir, 'tiny-weights');
    const w = spawnSync(process.execPath, [bundle, 'weights', '--config', 'tiny', '--seed', '3', '--out', dir], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: JOB_TIMEOUT_MS,
    });
    expect(w.status, w.stderr).toBe(0);
    const args = [...rankPrefillArgs({ tp: 2, sp: 'on' }), '--weights', dir];
    const r = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], args).done;
    expect(r.status, r.stderr).toBe(0);
    const launched = JSON.parse(r.stdout);
    const sim = await inProcessPrefill({ tp: 2 }, { weights: dir });
    expect(launched.outputSha256).toBe(sim.outputSha256);
    const [r0, r1] = launched.world.weightBytesReadPerRank;
    // the in-process run reads every rank's slices; a rank reads the replicated weights and its own half of the sharded ones
    expect(r0).toBe(r1);
    expect(r0).toBeLessThan(sim.weightBytesRead);
    const replicated = 2 * r0 - sim.weightBytesRead;
    expect(replicated).toBeGreaterThanOrEqual(0);
    expect(replicated).toBeLessThan(r0);
  });

  it('two "nodes" (two launchers, --nnodes 2, loopback master) give the one-node, 4-process result', async () => {
    const port = String(await freePort());
    const node = (k: number) =>
      launch(
        ['--nnodes', '2', '--node-rank', String(k), '--nproc-per-node', '2', '--master-addr', '127.0.0.1', '--master-port', port],
        rankPrefillArgs({ tp: 4, sp: 'on' }),
      );
    const [n0, n1] = [node(0), node(1)];
    const [r0, r1] = await Promise.all([n0.done, n1.done]);
    expect(r0.status, r0.stderr).toBe(0);
    expect(r1.status, r1.stderr).toBe(0);
    expect(r1.stdout).toBe('');
    expectSameRankedRun(JSON.parse(r0.stdout), await inProcessPrefill({ tp: 4, sp: 'on' }), 4, 'launch');
  });
});

describe('hcsp launch: faults end every rank within a bounded time, naming the cause, leaving nothing behind', () => {
  it('a rank killed mid-run (SIGKILL): the others end within seconds naming it, the launcher says which, no process is left', async () => {
    // long enough to be killed mid-run: the CPU reference at the small config
    const args = ['prefill', '--backend', 'cpu', '--comm', 'mpi', '--config', 'small', '--tokens', '1024', '--tp', '4', '--sp', 'on', '--json', '--quiet'];
    const job = launch(['--nproc-per-node', '4', '--master-port', String(await freePort())], args);
    // every rank started, and has been running a while (past the rendezvous and the MPI join)
    const victim = await waitFor('the four ranks', () => {
      const ranks = marked(job.mark).filter(isRank);
      return ranks.length === 4 && ranks.find((p) => p.rank === '2');
    });
    await new Promise((r) => setTimeout(r, 4000));
    const killedAt = performance.now();
    process.kill(victim.pid, 'SIGKILL');
    const r = await job.done;
    const secondsToFail = (performance.now() - killedAt) / 1000;
    expect(r.stdout).toBe('');
    expect(r.status).toBe(128 + 9);
    const lines = hcspLines(r.stderr);
    expect(lines).toContain(
      `hcsp launch: rank 2 (local rank 2, pid ${victim.pid}) was killed by SIGKILL; stopping ranks 0, 1, 3 of this node if they do not end within 3 s`,
    );
    for (const rank of [0, 1, 3]) {
      expect(lines).toContain(
        `hcsp: rank ${rank} of 4: the job ended: rank 2 (pid ${victim.pid} on ${lines.join('').match(/on ([^:)]+)\)/)![1]}) was lost: its connection to the rendezvous store closed before it finished (it crashed or was killed)`,
      );
    }
    // the others end by themselves, told by the store, well before the launcher's 3 s grace
    expect(secondsToFail).toBeLessThan(3);
    await expectNothingLeft(job.mark);
  });

  it('a rank stopped mid-run (SIGSTOP): the collective watchdog ends the job within its limit, naming the call and the stopped rank; nothing is left', async () => {
    const limit = 6;
    // HCSP_COLLECTIVE_TIMEOUT in the launcher's environment, which every rank inherits; no
    // --quiet: rank 0's progress lines tell when the graph runs
    const args = ['prefill', '--backend', 'cpu', '--comm', 'mpi', '--config', 'small', '--tokens', '1024', '--tp', '2', '--sp', 'on', '--json'];
    const job = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], args, { HCSP_COLLECTIVE_TIMEOUT: String(limit) });
    let progress = '';
    job.child.stderr!.on('data', (c: string) => (progress += c));
    let victim: { pid: number } | undefined;
    try {
      await waitFor('rank 0 running the graph', () => /\(rank 0\): \d+\/\d+ ops/.test(progress));
      victim = marked(job.mark)
        .filter(isRank)
        .find((p) => p.rank === '1');
      expect(victim).toBeDefined();
      const stoppedAt = performance.now();
      process.kill(victim!.pid, 'SIGSTOP');
      const r = await job.done;
      const seconds = (performance.now() - stoppedAt) / 1000;
      expect(r.stdout).toBe('');
      expect(r.status).toBe(1);
      const lines = hcspLines(r.stderr).filter((l) => !/ ops \(/.test(l));
      expect(lines[0]).toMatch(
        /^hcsp: rank 0 of 2: no progress for 6\.\d s in node \d+ \((allReduce|reduceScatter|allGather) L\d+\.[\w.]+\), the collective timeout \(--collective-timeout, HCSP_COLLECTIVE_TIMEOUT\): a peer is stopped, hung or far behind$/,
      );
      expect(lines[1]).toBe('hcsp: rank 0 of 2: rank 1 did not answer within 2 s (stopped, or hung); ending the job');
      expect(lines[2]).toMatch(
        /^hcsp launch: rank 0 \(local rank 0, pid \d+\) exited with code 1; stopping rank 1 of this node if it does not end within 3 s$/,
      );
      expect(lines[3]).toBe(
        `hcsp launch: rank 1 (local rank 1, pid ${victim!.pid}) is stopped (SIGSTOP or a debugger): it cannot end by itself, killing it now`,
      );
      expect(lines).toHaveLength(4);
      // the limit, the 2 s the ranks get to answer, and what rank 0 computed before it waited
      expect(seconds).toBeLessThan(limit + 2 + 4);
    } finally {
      // a failed expectation must not leave the stopped rank behind (the job's timeout kills what is left)
      if (victim) {
        try {
          process.kill(victim.pid, 'SIGCONT');
        } catch {
          // gone
        }
      }
    }
    await expectNothingLeft(job.mark);
  });

  it('a bad --collective-timeout is one usage error naming the value, from rank 0, before the ranks meet', async () => {
    const r = await launch(
      ['--nproc-per-node', '2', '--master-port', String(await freePort())],
      [...rankPrefillArgs({ tp: 2, sp: 'on' }), '--collective-timeout', '0'],
    ).done;
    expect(r.status).toBe(1);
    const lines = hcspLines(r.stderr).filter((l) => l.startsWith('hcsp:'));
    expect(lines).toEqual(['hcsp: --collective-timeout is too small: at least 0.001 s, got "0"']);
    const env = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], rankPrefillArgs({ tp: 2, sp: 'on' }), {
      HCSP_COLLECTIVE_TIMEOUT: '1e3',
    }).done;
    expect(env.status).toBe(1);
    expect(hcspLines(env.stderr).filter((l) => l.startsWith('hcsp:'))).toEqual([
      `hcsp: HCSP_COLLECTIVE_TIMEOUT must be a positive number of seconds, at most 2147483.647 (setTimeout's limit), got "1e3"`,
    ]);
  });

  it('a launcher killed outright (SIGKILL): its ranks end by themselves (their IPC channel closes), none is left', async () => {
    const args = ['prefill', '--backend', 'cpu', '--comm', 'mpi', '--config', 'small', '--tokens', '1024', '--tp', '2', '--sp', 'on', '--json', '--quiet'];
    // a launcher killed outright cannot remove the job's temporary folder: a private TMPDIR keeps it from the machine's
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-launch-killed-test-'));
    try {
      const job = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], args, { TMPDIR: dir });
      await waitFor('the two ranks', () => marked(job.mark).filter(isRank).length === 2);
      await new Promise((r) => setTimeout(r, 3000));
      const killedAt = performance.now();
      job.child.kill('SIGKILL');
      // the launcher's pipes stay open as long as a rank holds them: wait for its exit, not their close
      await job.exited;
      await waitFor('no process of the job', () => marked(job.mark).length === 0, 15_000);
      expect((performance.now() - killedAt) / 1000).toBeLessThan(15);
      expect(readdirSync(dir)).toEqual([expect.stringMatching(/^hcsp-launch-\w+$/)]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a launcher killed while its ranks join the MPI world: each rank ends within seconds, saying so; ompi-server and orted end too', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-launch-killed-join-test-'));
    const job = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], rankPrefillArgs({ tp: 2, sp: 'on' }), { TMPDIR: dir });
    try {
      // rank 0 starts ompi-server once every rank is in the store: from then on the ranks are in the MPI join
      await waitFor('the MPI join (ompi-server started)', () => marked(job.mark).some((p) => p.cmd.startsWith('ompi-server')));
      const ranks = marked(job.mark).filter(isRank);
      const killedAt = performance.now();
      job.child.kill('SIGKILL');
      await job.exited;
      await waitFor('no process of the job', () => marked(job.mark).length === 0, 15_000);
      expect((performance.now() - killedAt) / 1000).toBeLessThan(15);
      const lines = hcspLines((await job.done).stderr);
      for (const p of ranks) expect(lines).toContain(`hcsp: rank ${p.rank}: its launcher (hcsp launch, pid ${job.child.pid}) ended; ending too`);
    } finally {
      for (const p of marked(job.mark)) process.kill(p.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a launcher killed while rank 0 waits in the MPI join for a stopped rank 1: rank 0 and its ompi-server end within seconds; rank 1 once continued', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hcsp-launch-killed-join-test-'));
    const job = launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], rankPrefillArgs({ tp: 2, sp: 'on' }), { TMPDIR: dir });
    try {
      await waitFor('the MPI join (ompi-server started)', () => marked(job.mark).some((p) => p.cmd.startsWith('ompi-server')));
      const rank1 = marked(job.mark).find((p) => isRank(p) && p.rank === '1')!;
      // rank 1 stopped wherever it is in the join: rank 0 waits for it there (MPI_Comm_accept, or MPI_Comm_dup on its thread)
      process.kill(rank1.pid, 'SIGSTOP');
      await new Promise((r) => setTimeout(r, 3000));
      const killedAt = performance.now();
      job.child.kill('SIGKILL');
      await job.exited;
      // what rank 0 started carries its RANK too (ompi-server, its orted)
      await waitFor('rank 0 and what it started gone', () => marked(job.mark).every((p) => p.rank === '1'), 15_000);
      expect((performance.now() - killedAt) / 1000).toBeLessThan(15);
      process.kill(rank1.pid, 'SIGCONT');
      await waitFor('no process of the job', () => marked(job.mark).length === 0, 15_000);
      const lines = hcspLines((await job.done).stderr);
      for (const rank of [0, 1]) expect(lines).toContain(`hcsp: rank ${rank}: its launcher (hcsp launch, pid ${job.child.pid}) ended; ending too`);
    } finally {
      for (const p of marked(job.mark)) process.kill(p.pid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a rendezvous that never completes (node-rank 1 never started) times out on node 0, naming the missing ranks and node', async () => {
    const job = launch(
      ['--nnodes', '2', '--nproc-per-node', '2', '--master-port', String(await freePort()), '--rendezvous-timeout', '2'],
      rankPrefillArgs({ tp: 4, sp: 'on' }),
    );
    const r = await job.done;
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(hcspLines(r.stderr)).toContain(
      'hcsp: the rendezvous timed out after 2 s: ranks 2, 3 of 4 never joined (node-rank 1: is its launcher started, with the same --master-addr and --master-port?)',
    );
    expect(r.seconds).toBeLessThan(30);
    await expectNothingLeft(job.mark);
  });

  it('a node whose master never comes up: its ranks time out, naming where they looked', async () => {
    const port = await freePort();
    const job = launch(
      ['--nnodes', '2', '--node-rank', '1', '--nproc-per-node', '1', '--master-port', String(port), '--rendezvous-timeout', '2'],
      rankPrefillArgs({ tp: 2, sp: 'on' }),
    );
    const r = await job.done;
    expect(r.status).toBe(1);
    expect(hcspLines(r.stderr)[0]).toMatch(
      new RegExp(
        `^hcsp: rank 1: no rendezvous store at 127\\.0\\.0\\.1:${port} after 2 s \\(.*ECONNREFUSED.*\\): rank 0 serves it; is rank 0's node \\(--node-rank 0\\) started, with this --master-addr and --master-port\\?$`,
      ),
    );
    expect(r.seconds).toBeLessThan(30);
  });

  it('a master port in use: rank 0 says so, and every rank ends', async () => {
    const squatter = createServer(() => {});
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const { port } = squatter.address() as AddressInfo;
    try {
      const job = launch(['--nproc-per-node', '2', '--master-port', String(port), '--rendezvous-timeout', '20'], rankPrefillArgs({ tp: 2, sp: 'on' }));
      const r = await job.done;
      expect(r.status).toBe(1);
      const lines = hcspLines(r.stderr);
      expect(lines).toContain(
        `hcsp: rank 0 cannot serve the rendezvous store: MASTER_PORT ${port} on 127.0.0.1 is in use (another job, or a second node started with --node-rank 0?): choose another --master-port`,
      );
      expect(lines.some((l) => l.startsWith('hcsp launch: rank 0 (local rank 0, pid '))).toBe(true);
      // the launcher stops the rank left waiting on the squatter: the grace, then SIGTERM
      expect(r.seconds).toBeLessThan(20);
      await expectNothingLeft(job.mark);
    } finally {
      squatter.close();
    }
  });

  it('launchers that disagree on the world size: one clear error naming both sizes, every rank ends', async () => {
    const port = String(await freePort());
    const n0 = launch(['--nnodes', '2', '--node-rank', '0', '--nproc-per-node', '2', '--master-port', port], rankPrefillArgs({ tp: 4, sp: 'on' }));
    const n1 = launch(['--nnodes', '2', '--node-rank', '1', '--nproc-per-node', '3', '--master-port', port], rankPrefillArgs({ tp: 4, sp: 'on' }));
    const [r0, r1] = await Promise.all([n0.done, n1.done]);
    expect(r0.status).not.toBe(0);
    expect(r1.status).not.toBe(0);
    const all = [...hcspLines(r0.stderr), ...hcspLines(r1.stderr)];
    expect(
      all.some((l) =>
        /^hcsp: the ranks disagree on the world size: rank [345] \(pid \d+ on .+\) has WORLD_SIZE 6, rank 0 has 4 \(every node's launcher needs the same --nnodes and --nproc-per-node\)$/.test(
          l,
        ),
      ),
      all.join('\n'),
    ).toBe(true);
    expect(Math.max(r0.seconds, r1.seconds)).toBeLessThan(30);
    await expectNothingLeft(n0.mark);
    await expectNothingLeft(n1.mark);
  });

  it('ranks that plan different graphs (two nodes, different --seed) refuse together before any collective, naming each digest', async () => {
    const port = String(await freePort());
    const node = (k: number, seed: number) =>
      launch(['--nnodes', '2', '--node-rank', String(k), '--nproc-per-node', '1', '--master-port', port], rankPrefillArgs({ tp: 2, sp: 'on', seed }));
    const [r0, r1] = await Promise.all([node(0, 3).done, node(1, 4).done]);
    expect(r0.status).toBe(1);
    expect(r1.status).toBe(1);
    expect(hcspLines(r0.stderr)[0]).toMatch(
      /^hcsp: --comm mpi: the ranks planned different graphs \(digests of the graph and its feeds: rank 0: [0-9a-f]{12}, rank 1: [0-9a-f]{12}\); every rank needs the same command line and inputs$/,
    );
    expect(hcspLines(r1.stderr).filter((l) => l.startsWith('hcsp:'))).toEqual([]);
  });

  it('a world size that does not match --tp is one clear error', async () => {
    const r = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], rankPrefillArgs({ tp: 4, sp: 'on' })).done;
    expect(r.status).toBe(1);
    expect(hcspLines(r.stderr)).toContain(
      'hcsp: --comm mpi: --tp 4 does not match WORLD_SIZE 2: hcsp launch starts --nnodes x --nproc-per-node ranks, one per TP rank',
    );
  });

  it('a rank that fails after the start-up agreement ends the job through the store: its peer, waiting at a collective, ends naming it', async () => {
    // two ranks started by hand with torchrun's variables (as any launcher would): rank 1
    // fails after the agreement while rank 0 waits for it at a barrier
    const port = String(await freePort());
    const t0 = performance.now();
    const ranks = [0, 1].map(
      (rank) =>
        new Promise<{ status: number | null; stderr: string }>((resolve) => {
          const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/prefillRankFailChild.ts'], {
            cwd: ROOT,
            env: {
              ...process.env,
              OMPI_ALLOW_RUN_AS_ROOT: '1',
              OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
              RANK: String(rank),
              WORLD_SIZE: '2',
              MASTER_ADDR: '127.0.0.1',
              MASTER_PORT: port,
            },
            stdio: ['ignore', 'ignore', 'pipe'],
          });
          let stderr = '';
          child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
          const timer = setTimeout(() => child.kill('SIGKILL'), JOB_TIMEOUT_MS);
          child.on('close', (status) => {
            clearTimeout(timer);
            resolve({ status, stderr });
          });
        }),
    );
    const [r0, r1] = await Promise.all(ranks);
    expect(r1.status).toBe(1);
    expect(hcspLines(r1.stderr)).toEqual(['hcsp: rank 1 of 2: injected failure after the start-up agreement']);
    expect(r0.status).toBe(1);
    expect(hcspLines(r0.stderr)).toEqual(['hcsp: rank 0 of 2: the job ended: rank 1 failed (see its message)']);
    expect((performance.now() - t0) / 1000).toBeLessThan(60);
  });

  it('bad launcher options are refused before any rank starts', () => {
    const run = (args: string[]) => spawnSync(process.execPath, [bundle, 'launch', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000 });
    const cases: [string[], string][] = [
      [
        ['--nproc-per-node', '2', '--', 'plan'],
        'hcsp: hcsp launch runs `prefill ... --comm mpi|nccl` as ranks, got "plan": write `hcsp launch [options] -- prefill ...`',
      ],
      [
        ['--nproc-per-node', '2', '--', 'prefill', '--tp', '2'],
        "hcsp: hcsp launch: the ranks' prefill needs --comm mpi (host ranks) or --comm nccl (GPU ranks), got no --comm (sim, every rank in one process)",
      ],
      [['--nproc-per-node', '0', '--', ...rankPrefillArgs({ tp: 2, sp: 'on' })], 'hcsp: --nproc-per-node is too small: at least 1, got "0"'],
      [
        ['--nproc-per-node', '2', '--nnodes', '2', '--node-rank', '2', '--', ...rankPrefillArgs({ tp: 4, sp: 'on' })],
        'hcsp: --node-rank is too large: at most 1, got "2"',
      ],
      [
        ['--nproc-per-node', '2', '--master-port', '70000', '--', ...rankPrefillArgs({ tp: 2, sp: 'on' })],
        'hcsp: --master-port is too large: at most 65535, got "70000"',
      ],
    ];
    for (const [args, message] of cases) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(1);
      expect(r.stderr).toBe(`${message}\n`);
    }
  });
});

describe('hcsp launch -- prefill --comm nccl: GPU ranks on RCCL/NCCL', () => {
  it('on a backend or device without a GPU, every rank refuses alike and rank 0 says why, once', async () => {
    const args = ['prefill', '--backend', 'rocm', '--device', 'host', '--comm', 'nccl', '--config', 'tiny', '--tokens', '40', '--tp', '2', '--quiet'];
    const r = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], args).done;
    expect(r.status).toBe(1);
    const lines = hcspLines(r.stderr).filter((l) => l.startsWith('hcsp:'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^hcsp: --comm nccl runs on a GPU \(--backend rocm --device hip or cuda\), not on rocm on the host device \(\d+ threads\), exact \w+ GEMM$/,
    );
    const cpu = await launch(['--nproc-per-node', '2', '--master-port', String(await freePort())], [...args.slice(0, 2), 'cpu', ...args.slice(5)]).done;
    expect(cpu.status).toBe(1);
    expect(hcspLines(cpu.stderr).filter((l) => l.startsWith('hcsp:'))).toEqual([
      "hcsp: --comm nccl runs a rank's part on --backend rocm with --device hip or cuda, not --backend cpu",
    ]);
  });
});
