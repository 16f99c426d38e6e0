// The rendezvous store against strangers (issue 21), in this process: a job's ranks meet at a
// store on a loopback port while other connections send what a hostile or careless process
// on the machine could: hellos for a taken rank, a world of another size, no proof or a proof
// under another secret, hellos after the world is complete, garbage, a line without end,
// silence, a flood of connections. Each is closed alone; the ranks meet, exchange values and
// leave as if nothing happened. The secret itself never goes on the wire, and a rank believes
// only a store that proves it knows it.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_TIMER_MS } from './seconds.ts';
import { MAX_STRANGERS, RendezvousClient, RendezvousServer, type StoreServerOptions } from './rendezvousStore.ts';
import { newSecret, proof } from './rendezvousSecret.ts';

const MAGIC = 'hcsp-rendezvous/2';
const HOST = '127.0.0.1';

interface Stranger {
  /** what the store sent, line by line */
  received: string[];
  /** resolves with the milliseconds from connecting to the store closing the connection */
  closed: Promise<number>;
  socket: Socket;
}

/** connects to the store; `script` runs once the store's challenge arrived (or at once with `now`) */
function stranger(port: number, script: (s: Socket, challengeNonce: string) => void = () => {}, now = false): Stranger {
  const socket = connect({ host: HOST, port });
  const received: string[] = [];
  const t0 = performance.now();
  let buffered = '';
  let started = false;
  socket.on('error', () => {});
  socket.setEncoding('utf8');
  const start = (nonce: string): void => {
    if (started) return;
    started = true;
    script(socket, nonce);
  };
  if (now) socket.once('connect', () => start(''));
  socket.on('data', (c: string) => {
    buffered += c;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      received.push(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      const m = JSON.parse(received.at(-1)!);
      if (m.t === 'challenge') start(m.nonce);
    }
  });
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - t0)));
  return { received, closed, socket };
}

const hello = (s: Socket, fields: Record<string, unknown>): void => {
  s.write(`${JSON.stringify({ t: 'hello', magic: MAGIC, host: 'stranger', pid: 4242, nonce: 'n', ...fields })}\n`);
};

interface TestJob {
  server: RendezvousServer;
  port: number;
  secret: string;
  aborts: string[];
  join(rank: number, o?: { secret?: string; worldSize?: number }): Promise<RendezvousClient>;
}

const servers: RendezvousServer[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.destroy();
});

async function store(worldSize: number, options: Partial<StoreServerOptions> = {}): Promise<TestJob> {
  const secret = newSecret();
  const server = await RendezvousServer.listen({ host: HOST, port: 0, worldSize, secret, timeoutMs: 30_000, ...options });
  servers.push(server);
  const aborts: string[] = [];
  const port = server.port;
  return {
    server,
    port,
    secret,
    aborts,
    join: (rank, o = {}) =>
      RendezvousClient.join(
        { host: HOST, port, rank, worldSize: o.worldSize ?? worldSize, secret: o.secret ?? secret, timeoutMs: options.timeoutMs ?? 30_000 },
        (m) => aborts.push(m),
      ),
  };
}

/** the ranks exchange values and leave: the job went on untouched */
async function expectJobGoesOn(job: TestJob, clients: RendezvousClient[]): Promise<void> {
  const all = await Promise.all(clients.map((c) => c.gather('k', Uint8Array.of(c.rank, 7))));
  for (const got of all) expect(got.map((b) => [...b])).toEqual(clients.map((c) => [c.rank, 7]));
  await Promise.all(clients.map((c) => c.bye()));
  await job.server.closeWhenDone();
  expect(job.aborts).toEqual([]);
}

describe('the rendezvous store: strangers are closed alone, the job goes on', () => {
  it('before the world is complete: a taken rank, the missing ranks, a world of another size, no proof, a wrong proof, garbage, a line without end, silence', async () => {
    const job = await store(3, { helloTimeoutMs: 300 });
    const rank0 = job.join(0);
    // rank 0 is in: a stranger claims it, and the ranks the job still waits for
    await new Promise((r) => setTimeout(r, 100));
    const otherSecret = newSecret();
    const strangers = [
      stranger(job.port, (s) => hello(s, { rank: 0, worldSize: 3 })),
      stranger(job.port, (s) => hello(s, { rank: 1, worldSize: 3, proof: 'x'.repeat(64) })),
      stranger(job.port, (s) => hello(s, { rank: 2, worldSize: 999 })),
      stranger(job.port, (s, nonce) => hello(s, { rank: 2, worldSize: 3, proof: proof(otherSecret, 'hello', MAGIC, nonce, 'n', '2', '3') })),
      stranger(job.port, (s) => s.write('{"t":"set","key":"mpi/port","value":"evil"}\n')),
      stranger(job.port, (s) => s.write('not json\n')),
      stranger(job.port, (s) => s.write('x'.repeat(40 << 20)), true),
      stranger(job.port),
    ];
    const closedAfter = await Promise.all(strangers.map((s) => s.closed));
    // closed at once (the silent one after the hello timeout), never told anything but the challenge and a refusal
    expect(Math.max(...closedAfter)).toBeLessThan(5000);
    for (const s of strangers) for (const line of s.received) expect(JSON.parse(line).t).toMatch(/^(challenge|refused)$/);
    const clients = await Promise.all([rank0, job.join(1), job.join(2)]);
    await expectJobGoesOn(job, clients);
  });

  it("after the world is complete: a process with the job's secret is refused, saying why; strangers are closed; the job goes on", async () => {
    const job = await store(2);
    const clients = await Promise.all([job.join(0), job.join(1)]);
    await expect(job.join(1)).rejects.toThrow(
      /^rank 1: the rendezvous store at 127\.0\.0\.1:\d+ refused this rank: the job's world of 2 is complete: rank 1 \(pid \d+ on .+\) came late \(a second launcher with this --master-addr, --master-port and HCSP_RENDEZVOUS_SECRET\?\)$/,
    );
    await expect(job.join(5, { worldSize: 999 })).rejects.toThrow(/refused this rank: the job's world of 2 is complete/);
    const late = [stranger(job.port, (s) => hello(s, { rank: 0, worldSize: 2 })), stranger(job.port, (s) => hello(s, { rank: 2, worldSize: 4 }))];
    await Promise.all(late.map((s) => s.closed));
    await expectJobGoesOn(job, clients);
  });

  it('a flood of connections: those over the bound are closed at once; the job goes on', async () => {
    const job = await store(2);
    const clients = await Promise.all([job.join(0), job.join(1)]);
    const flood = Array.from({ length: MAX_STRANGERS + 16 }, () => stranger(job.port, () => {}, true));
    const closedAt = await Promise.race([Promise.all(flood.slice(-16).map((s) => s.closed)), new Promise<null>((r) => setTimeout(() => r(null), 3000))]);
    expect(closedAt).not.toBeNull();
    for (const s of flood) s.socket.destroy();
    await expectJobGoesOn(job, clients);
  });

  it('a rank with another secret is refused, naming HCSP_RENDEZVOUS_SECRET; the job waits for the right one', async () => {
    const job = await store(2);
    const rank0 = job.join(0);
    await expect(job.join(1, { secret: newSecret() })).rejects.toThrow(
      /^rank 1: the rendezvous store at 127\.0\.0\.1:\d+ refused this rank's HCSP_RENDEZVOUS_SECRET: the port serves another job, or this node's secret is not rank 0's node's$/,
    );
    const clients = await Promise.all([rank0, job.join(1)]);
    await expectJobGoesOn(job, clients);
  });

  it('ranks of the job that disagree on the world still end it, naming both sizes', async () => {
    const job = await store(2);
    const rank0 = job.join(0).then(
      () => null,
      (e: Error) => e.message,
    );
    await expect(job.join(1, { worldSize: 3 })).rejects.toThrow(
      /^the ranks disagree on the world size: rank 1 \(pid \d+ on .+\) has WORLD_SIZE 3, rank 0 has 2 \(every node's launcher needs the same --nnodes and --nproc-per-node\)$/,
    );
    expect(await rank0).toMatch(/^the ranks disagree on the world size/);
  });

  it('the longest timeout a timer can wait works (no overflow into an immediate timeout)', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => {
      if (w.name === 'TimeoutOverflowWarning') warnings.push(w.message);
    };
    process.on('warning', onWarning);
    try {
      const job = await store(2, { timeoutMs: MAX_TIMER_MS });
      const clients = await Promise.all([job.join(0), job.join(1)]);
      await expectJobGoesOn(job, clients);
      expect(warnings).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});

describe('a rank and what answers on the port', () => {
  /** a listener that answers like a store that does not know the secret, recording what the rank sends */
  async function impostor(answer: (s: Socket, hello: Record<string, unknown>) => void): Promise<{ port: number; sent: string[]; close: () => void }> {
    const sent: string[] = [];
    const server = createServer((s) => {
      s.setEncoding('utf8');
      s.on('error', () => {});
      s.on('data', (c: string) => {
        sent.push(c);
        answer(s, JSON.parse(c.split('\n')[0]));
      });
      s.write(`${JSON.stringify({ t: 'challenge', magic: MAGIC, nonce: 'abc' })}\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    return { port: (server.address() as AddressInfo).port, sent, close: () => server.close() };
  }

  it('never sends the secret, and believes nothing from a store that cannot prove it knows it', async () => {
    const secret = newSecret();
    const fake = await impostor((s) => s.write(`${JSON.stringify({ t: 'welcome', proof: 'f'.repeat(64) })}\n${JSON.stringify({ t: 'ready' })}\n`));
    try {
      const joined = RendezvousClient.join({ host: HOST, port: fake.port, rank: 1, worldSize: 2, secret, timeoutMs: 5000 }, () => {});
      await expect(joined).rejects.toThrow(
        new RegExp(
          `^rank 1: what answers at 127\\.0\\.0\\.1:${fake.port} is not this job's rendezvous store \\(it did not prove that it knows the job's HCSP_RENDEZVOUS_SECRET\\): another program on this --master-port\\?$`,
        ),
      );
      const sent = fake.sent.join('');
      expect(JSON.parse(sent.split('\n')[0])).toMatchObject({ t: 'hello', rank: 1, worldSize: 2 });
      expect(sent).not.toContain(secret);
    } finally {
      fake.close();
    }
  });

  it('a line over the bound from what answers ends the join, naming it', async () => {
    const fake = await impostor((s) => s.write('y'.repeat(2 << 20)));
    try {
      const joined = RendezvousClient.join({ host: HOST, port: fake.port, rank: 1, worldSize: 2, secret: newSecret(), timeoutMs: 5000 }, () => {});
      await expect(joined).rejects.toThrow(/is not this job's rendezvous store/);
    } finally {
      fake.close();
    }
  });
});
