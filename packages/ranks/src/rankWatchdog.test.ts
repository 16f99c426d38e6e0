import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RendezvousClient, RendezvousServer } from './rendezvousStore.ts';
import { ASK_MS, collectiveTimeoutMs, describeAnswers, RankWatchdog } from './rankWatchdog.ts';

afterEach(() => vi.restoreAllMocks());

describe('the collective timeout', () => {
  it("is --collective-timeout, else HCSP_COLLECTIVE_TIMEOUT, else PyTorch's defaults: 30 min for host ranks (Gloo's), 10 min for GPU ranks (NCCL's)", () => {
    expect(collectiveTimeoutMs('mpi', undefined, {})).toBe(1_800_000);
    expect(collectiveTimeoutMs('nccl', undefined, {})).toBe(600_000);
    expect(collectiveTimeoutMs('mpi', undefined, { HCSP_COLLECTIVE_TIMEOUT: '90' })).toBe(90_000);
    expect(collectiveTimeoutMs('nccl', '2.5', { HCSP_COLLECTIVE_TIMEOUT: '90' })).toBe(2500);
  });

  it('a bad value is a usage error naming where it came from and the value', () => {
    expect(() => collectiveTimeoutMs('mpi', '0', {})).toThrow('--collective-timeout is too small: at least 0.001 s, got "0"');
    expect(() => collectiveTimeoutMs('mpi', 'ten', {})).toThrow(
      `--collective-timeout must be a positive number of seconds, at most 2147483.647 (setTimeout's limit), got "ten"`,
    );
    expect(() => collectiveTimeoutMs('nccl', '2147484', {})).toThrow(
      `--collective-timeout is too large: at most 2147483.647 s (setTimeout's limit), got "2147484"`,
    );
    expect(() => collectiveTimeoutMs('mpi', undefined, { HCSP_COLLECTIVE_TIMEOUT: '-5' })).toThrow(
      'HCSP_COLLECTIVE_TIMEOUT must be a positive number of seconds',
    );
    expect(() => collectiveTimeoutMs('nccl', undefined, { HCSP_COLLECTIVE_TIMEOUT: '' })).toThrow(
      'HCSP_COLLECTIVE_TIMEOUT must be a positive number of seconds, at most 2147483.647 (setTimeout\'s limit), got ""',
    );
  });
});

describe("what the peers' answers say about a stuck call", () => {
  const stuck = { what: 'node 37 (reduceScatter layers.1.attn)', waitedMs: 6012 };
  const at = (what: string, ms: number, inCall = true) => JSON.stringify({ what, inCall, ms });

  it('names the ranks that did not answer, those not arrived, and those waiting in it too', () => {
    const answers = new Map([
      [0, at(stuck.what, 6100)],
      [2, at(stuck.what, 6050)],
      [3, at('node 36 (allReduce layers.1.mlp)', 2250, false)],
      [4, at('node 12 (allGather layers.0.attn)', 9000)],
      [5, 'null'],
      [6, '{"what":1}'],
    ]);
    expect(describeAnswers(0, 8, stuck, answers)).toBe(
      'ranks 1, 7 did not answer within 2 s (stopped, or hung); ' +
        'rank 3 has not reached it (between collectives, 2.3 s after node 36 (allReduce layers.1.mlp)); ' +
        'rank 4 has not reached it (waiting 9.0 s in node 12 (allGather layers.0.attn)); ' +
        'rank 5 has not reached it (before its first collective); ' +
        'rank 6 gave an unreadable answer; ' +
        'rank 2 waits there too',
    );
  });

  it('every rank in the call; one silent rank; the store itself silent', () => {
    expect(
      describeAnswers(
        1,
        2,
        stuck,
        new Map([
          [0, at(stuck.what, 6000)],
          [1, at(stuck.what, 6000)],
        ]),
      ),
    ).toBe('rank 0 waits there too; every rank is in it: the call itself makes no progress');
    expect(describeAnswers(0, 2, stuck, new Map([[0, at(stuck.what, 6000)]]))).toBe('rank 1 did not answer within 2 s (stopped, or hung)');
    expect(describeAnswers(1, 2, stuck, new Map())).toBe('the rendezvous store did not answer within 2 s: rank 0, which serves it, is stopped or hung');
  });
});

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('a stuck rank under hcsp launch (an in-process rendezvous store of three ranks)', () => {
  it('asks the others through the store, names the one that did not answer, ends the job and this process', async () => {
    const port = await freePort();
    const server = await RendezvousServer.listen({ host: '127.0.0.1', port, worldSize: 3, secret: 'a test job', timeoutMs: 10_000 });
    const aborted = new Map<number, string>();
    const clients = await Promise.all(
      [0, 1, 2].map((rank) =>
        RendezvousClient.join({ host: '127.0.0.1', port, rank, worldSize: 3, secret: 'a test job', timeoutMs: 10_000 }, (m) => aborted.set(rank, m)),
      ),
    );
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
    const exited: number[] = [];
    const exit = ((code: number) => void exited.push(code)) as (code: number) => never;
    // rank 0 and rank 1 wait in the same all-reduce; rank 2 is stopped: it never answers
    const rank0 = new RankWatchdog(0, 3, 300, exit);
    const rank1 = new RankWatchdog(1, 3, 60_000, exit);
    rank0.useStore(clients[0]);
    rank1.useStore(clients[1]);
    const what = 'node 5 (allReduce layers.0.mlp)';
    void rank1.watchdog.watch(what, () => new Promise(() => {}));
    const t0 = performance.now();
    void rank0.watchdog.watch(what, () => new Promise(() => {}));
    try {
      await vi.waitFor(() => expect(exited).toEqual([1]), { timeout: 10_000, interval: 50 });
      const seconds = (performance.now() - t0) / 1000;
      // the limit, then the answers' wait
      expect(seconds).toBeGreaterThanOrEqual((300 + ASK_MS) / 1000 - 0.05);
      expect(seconds).toBeLessThan(6);
      expect(stderr[0]).toMatch(
        /^hcsp: rank 0 of 3: no progress for 0\.\d s in node 5 \(allReduce layers\.0\.mlp\), the collective timeout \(--collective-timeout, HCSP_COLLECTIVE_TIMEOUT\): a peer is stopped, hung or far behind\n$/,
      );
      expect(stderr[1]).toBe('hcsp: rank 0 of 3: rank 2 did not answer within 2 s (stopped, or hung); rank 1 waits there too; ending the job\n');
      expect(stderr).toHaveLength(2);
      // every other rank is told, with the whole story
      await vi.waitFor(() => expect(aborted.size).toBe(2), { timeout: 5000, interval: 20 });
      for (const rank of [1, 2]) {
        expect(aborted.get(rank)).toMatch(
          /^rank 0 of 3 waited 0\.\d s in node 5 \(allReduce layers\.0\.mlp\): rank 2 did not answer within 2 s \(stopped, or hung\); rank 1 waits there too$/,
        );
      }
    } finally {
      server.destroy();
    }
  });
});

describe('a rank whose own timer fires late', () => {
  it('says that this process itself was held (stopped, then continued), not a peer', async () => {
    const stderr: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      stderr.push(String(chunk));
      return true;
    });
    const exited: number[] = [];
    // under mpirun, no store: the line, then the end
    const rank = new RankWatchdog(1, 2, 100, ((code: number) => void exited.push(code)) as (code: number) => never);
    void rank.watchdog.watch('node 32 (allReduce L0.attn.all_reduce)', () => new Promise(() => {}));
    // this thread held for 1.6 s, as a SIGSTOPped process is
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1600);
    await vi.waitFor(() => expect(exited).toEqual([1]), { timeout: 5000, interval: 20 });
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(
      /^hcsp: rank 1 of 2: no progress for 1\.\d s in node 32 \(allReduce L0\.attn\.all_reduce\), the collective timeout \(--collective-timeout, HCSP_COLLECTIVE_TIMEOUT\): this process was itself stopped or blocked \(its timer fired 1\.\d s late\)\n$/,
    );
  });
});

describe('a stuck rank 0 serves the store in its own process', () => {
  it('the other ranks are told its verdict before the store ends with it', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/rankWatchdogStoreChild.ts', String(port)], {
      cwd: fileURLToPath(new URL('../../../', import.meta.url)),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    try {
      let told = '';
      // (join retries while the child's store is not listening yet)
      const client = await RendezvousClient.join(
        { host: '127.0.0.1', port, rank: 1, worldSize: 2, secret: 'a test job', timeoutMs: 20_000 },
        (m) => (told = m),
      );
      // rank 1 answers from between two calls
      const rank1 = new RankWatchdog(1, 2, 60_000, (): never => undefined as never);
      rank1.useStore(client);
      await rank1.watchdog.watch('node 8 (allReduce layers.0.attn)', async () => {});
      expect(await exited).toBe(1);
      await vi.waitFor(() => expect(told).not.toBe(''), { timeout: 5000, interval: 20 });
      expect(told).toMatch(
        /^rank 0 of 2 waited 1\.\d s in node 9 \(allGather layers\.0\.attn\): rank 1 has not reached it \(between collectives, \d+\.\d s after node 8 \(allReduce layers\.0\.attn\)\)$/,
      );
      expect(stderr).toMatch(/^hcsp: rank 0 of 2: no progress for 1\.\d s in node 9 \(allGather layers\.0\.attn\), the collective timeout/);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  });
});
