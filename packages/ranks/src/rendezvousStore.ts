// The ranks' rendezvous (issue 13): a small key-value store on MASTER_ADDR:MASTER_PORT,
// served by rank 0 as torch's TCPStore is, through which separately started rank processes
// find each other, check that they agree on the world, exchange the few bytes a
// communicator needs to start (Open MPI's server URI and port name, NCCL's unique id), and
// learn that a peer was lost. Every rank, rank 0 included, is a client of the store over TCP.
//
// Written by hand on node:net: no maintained npm package serves a TCPStore-like store, and
// the protocol is a few newline-delimited JSON messages (jsonLines.ts):
//   server -> client: challenge {nonce} (on connecting)
//   client -> server: hello {rank, worldSize, host, pid, nonce, proof} | set {key, value}
//                     | get {key} | fail {message} | bye
//   server -> client: welcome {proof} | refused {message} | ready (every rank said hello)
//                     | value {key, value} | abort {message} (the job cannot go on: who is
//                     missing, who was lost) | byeAck
// Trust (issue 21): anyone who can reach the port can connect, so a connection counts only
// once its hello proves that it knows the job's secret (rendezvousSecret.ts: an HMAC of the
// server's nonce, the rank and the world size; the secret itself never travels), and the
// store proves the same to the rank in its welcome, before the rank believes anything it
// says. A connection that has not proved it is a stranger: it may send one bounded line
// within a bounded time, and whatever it sends (a wrong or missing proof, a taken rank, a
// world of another size, a hello once the world is complete, garbage, a line without end)
// closes its own connection and nothing else. Only ranks that proved the secret can end the
// job: a genuine rank that disagrees on the world, or joins twice, is a misconfigured job.
// Liveness: a rank whose connection closes before its bye was lost (crashed or killed): the
// server tells every other rank, naming it, and they end. A rank that loses the store has
// lost rank 0.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { hostname } from 'node:os';
import { MAX_TIMER_MS } from './seconds.ts';
import { readJsonLines, sendJsonLine as send, type Message } from './jsonLines.ts';
import { SECRET_ENV, newNonce, proof, sameProof } from './rendezvousSecret.ts';

const MAGIC = 'hcsp-rendezvous/2';
/** how often a client retries while rank 0's store is not listening yet */
const CONNECT_RETRY_MS = 100;
/** the longest line from a connection that has not proved the secret: a hello is a few hundred characters */
const MAX_HELLO_LINE = 4096;
/** the longest line between a rank and the store (its values are tens of bytes: port names, NCCL's id, control gathers) */
export const MAX_LINE = 1 << 20;
/** a connection must prove the secret within this time of connecting, or it is closed */
export const HELLO_TIMEOUT_MS = 10_000;
/** connections not (yet) a rank's, at most: more are closed at once, so that strangers cannot take rank 0's file descriptors */
export const MAX_STRANGERS = 64;
/** a refused connection is closed this long after its answer, if its peer has not closed it */
const REFUSED_LINGER_MS = 2000;

/** The rendezvous failed or the job was aborted through it: the message says who and why. */
export class RendezvousError extends Error {
  override name = 'RendezvousError';
  constructor(
    message: string,
    /** the store's verdict, which every rank got (rank 0 reports it); false: this rank's own */
    readonly fromStore = false,
  ) {
    super(message);
  }
}

/** timers wait at most setTimeout's limit (a longer delay would fire at once) */
function timerMs(ms: number): number {
  return Math.min(Math.max(0, ms), MAX_TIMER_MS);
}

/** ends a connection the store is done with: its peer reads the last answer and closes; one that does not is closed a moment later */
function closeSoon(socket: Socket): void {
  socket.end();
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
}

interface Member {
  socket: Socket;
  host: string;
  pid: number;
  bye: boolean;
}

export interface StoreServerOptions {
  host: string;
  port: number;
  worldSize: number;
  /** what every rank must prove it knows (HCSP_RENDEZVOUS_SECRET) */
  secret: string;
  /** every rank must say hello within this time of the server starting */
  timeoutMs: number;
  /** LOCAL_WORLD_SIZE when every node runs as many ranks: lets a timeout name the missing nodes */
  ranksPerNode?: number;
  /** how long a connection may take to prove the secret (default HELLO_TIMEOUT_MS) */
  helloTimeoutMs?: number;
}

/** The store, served in rank 0's process. */
export class RendezvousServer {
  private readonly members = new Map<number, Member>();
  private readonly values = new Map<string, string>();
  private readonly waiting = new Map<string, Socket[]>();
  private ready = false;
  private aborted: string | null = null;
  /** open connections that are not a rank's */
  private readonly strangers = new Set<Socket>();
  private timer: NodeJS.Timeout;
  private allBye: () => void = () => {};
  private readonly finished: Promise<void>;

  private constructor(
    private readonly server: Server,
    private readonly options: StoreServerOptions,
  ) {
    this.finished = new Promise((resolve) => (this.allBye = resolve));
    this.timer = setTimeout(() => this.timeout(), timerMs(options.timeoutMs));
    this.timer.unref();
    server.on('connection', (socket) => this.accept(socket));
  }

  /** Listens on host:port; a port in use (or an address this machine does not have) is a RendezvousError saying so. */
  static listen(options: StoreServerOptions): Promise<RendezvousServer> {
    return new Promise((resolve, reject) => {
      const server = createServer();
      server.once('error', (e: NodeJS.ErrnoException) => {
        const where = `${options.host}:${options.port}`;
        if (e.code === 'EADDRINUSE') {
          reject(
            new RendezvousError(
              `rank 0 cannot serve the rendezvous store: MASTER_PORT ${options.port} on ${options.host} is in use (another job, or a second node started with --node-rank 0?): choose another --master-port`,
            ),
          );
        } else if (e.code === 'EADDRNOTAVAIL') {
          reject(
            new RendezvousError(
              `rank 0 cannot serve the rendezvous store at ${where}: MASTER_ADDR ${options.host} is not an address of this machine (${hostname()}); rank 0 runs on the node with --node-rank 0`,
            ),
          );
        } else {
          reject(new RendezvousError(`rank 0 cannot serve the rendezvous store at ${where}: ${e.message}`));
        }
      });
      server.listen({ host: options.host, port: options.port, exclusive: true }, () => resolve(new RendezvousServer(server, options)));
    });
  }

  /** where the store listens (the port the kernel chose, when asked for port 0) */
  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** resolves once every rank said bye (or the job was aborted); then the server closes */
  async closeWhenDone(): Promise<void> {
    await this.finished;
    clearTimeout(this.timer);
    for (const m of this.members.values()) m.socket.end();
    // the server closes once every connection has: a stranger's must not hold it
    for (const s of this.strangers) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** ends the store at once (rank 0 failing): the others see it gone */
  destroy(): void {
    clearTimeout(this.timer);
    for (const m of this.members.values()) m.socket.destroy();
    for (const s of this.strangers) s.destroy();
    this.server.close();
    this.allBye();
  }

  private who(rank: number): string {
    const m = this.members.get(rank);
    return m ? `rank ${rank} (pid ${m.pid} on ${m.host})` : `rank ${rank}`;
  }

  /** a new connection: a stranger, bounded in what it may send and for how long, until its hello proves the secret */
  private accept(socket: Socket): void {
    socket.on('error', () => {});
    if (this.strangers.size >= MAX_STRANGERS) {
      socket.destroy();
      return;
    }
    this.strangers.add(socket);
    let rank: number | null = null;
    let answered = false;
    const nonce = newNonce();
    const helloTimer = setTimeout(() => socket.destroy(), this.options.helloTimeoutMs ?? HELLO_TIMEOUT_MS);
    helloTimer.unref();
    const framing = readJsonLines(
      socket,
      MAX_HELLO_LINE,
      (m) => {
        if (rank !== null) return this.message(rank, socket, m);
        // one hello per connection: what a refused peer sends after it is ignored until its connection closes
        if (answered) return;
        answered = true;
        clearTimeout(helloTimer);
        rank = this.hello(socket, m, nonce);
        if (rank === null) return;
        this.strangers.delete(socket);
        framing.maxLine = MAX_LINE;
      },
      (why) => {
        if (rank !== null) this.abort(`${this.who(rank)} sent the rendezvous store ${why}`);
        socket.destroy();
      },
    );
    socket.on('close', () => {
      clearTimeout(helloTimer);
      if (rank === null) {
        this.strangers.delete(socket);
        return;
      }
      const member = this.members.get(rank);
      if (!member || member.socket !== socket) return;
      if (!member.bye) this.abort(`${this.who(rank)} was lost: its connection to the rendezvous store closed before it finished (it crashed or was killed)`);
    });
    send(socket, { t: 'challenge', magic: MAGIC, nonce });
  }

  /** answers a connection that will not be a rank (`message`: why, for a peer that proved the secret), then closes it */
  private refuse(socket: Socket, message?: string): void {
    send(socket, message === undefined ? { t: 'refused' } : { t: 'refused', message });
    closeSoon(socket);
  }

  /** a new connection's first message: its rank, checked against the secret and the world; null when refused */
  private hello(socket: Socket, m: Message, nonce: string): number | null {
    if (m.t !== 'hello' || m.magic !== MAGIC) {
      socket.destroy();
      return null;
    }
    const { secret, worldSize: size } = this.options;
    const rank = m.rank;
    const worldSize = m.worldSize;
    if (typeof m.nonce !== 'string' || !sameProof(m.proof, proof(secret, 'hello', MAGIC, nonce, m.nonce, String(rank), String(worldSize)))) {
      this.refuse(socket);
      return null;
    }
    // from here on the peer is one of the job's processes: it may be told what is wrong
    send(socket, { t: 'welcome', proof: proof(secret, 'welcome', MAGIC, m.nonce, nonce, String(rank)) });
    const host = String(m.host).slice(0, 255);
    const pid = Number(m.pid);
    if (this.aborted !== null) {
      send(socket, { t: 'abort', message: this.aborted });
      closeSoon(socket);
      return null;
    }
    if (this.ready) {
      this.refuse(
        socket,
        `the job's world of ${size} is complete: rank ${rank} (pid ${pid} on ${host}) came late (a second launcher with this --master-addr, --master-port and ${SECRET_ENV}?)`,
      );
      return null;
    }
    if (worldSize !== size) {
      this.abort(
        `the ranks disagree on the world size: rank ${rank} (pid ${pid} on ${host}) has WORLD_SIZE ${worldSize}, rank 0 has ${size} (every node's launcher needs the same --nnodes and --nproc-per-node)`,
        socket,
      );
      return null;
    }
    if (!Number.isInteger(rank) || (rank as number) < 0 || (rank as number) >= size) {
      this.abort(`rank ${rank} (pid ${pid} on ${host}) is outside the world of ${size}`, socket);
      return null;
    }
    const r = rank as number;
    const twin = this.members.get(r);
    if (twin) {
      this.abort(`rank ${r} joined twice: pid ${twin.pid} on ${twin.host} and pid ${pid} on ${host} (two nodes started with the same --node-rank?)`, socket);
      return null;
    }
    this.members.set(r, { socket, host, pid, bye: false });
    if (this.members.size === size) {
      this.ready = true;
      clearTimeout(this.timer);
      for (const member of this.members.values()) send(member.socket, { t: 'ready' });
    }
    return r;
  }

  private message(rank: number, socket: Socket, m: Message): void {
    if (m.t === 'set' && typeof m.key === 'string' && typeof m.value === 'string') {
      this.values.set(m.key, m.value);
      for (const s of this.waiting.get(m.key) ?? []) send(s, { t: 'value', key: m.key, value: m.value });
      this.waiting.delete(m.key);
    } else if (m.t === 'get' && typeof m.key === 'string') {
      const v = this.values.get(m.key);
      if (v !== undefined) send(socket, { t: 'value', key: m.key, value: v });
      else this.waiting.set(m.key, [...(this.waiting.get(m.key) ?? []), socket]);
    } else if (m.t === 'fail') {
      this.abort(String(m.message));
    } else if (m.t === 'bye') {
      this.members.get(rank)!.bye = true;
      send(socket, { t: 'byeAck' });
      if (this.ready && [...this.members.values()].every((x) => x.bye)) this.allBye();
    }
  }

  private timeout(): void {
    if (this.ready) return;
    const missing = Array.from({ length: this.options.worldSize }, (_, r) => r).filter((r) => !this.members.has(r));
    const per = this.options.ranksPerNode;
    const nodes = per ? [...new Set(missing.map((r) => Math.floor(r / per)))] : [];
    const nodeText =
      nodes.length > 0
        ? ` (node-rank${nodes.length > 1 ? 's' : ''} ${nodes.join(', ')}: ${nodes.length > 1 ? 'are their launchers' : 'is its launcher'} started, with the same --master-addr and --master-port?)`
        : '';
    this.abort(
      `the rendezvous timed out after ${this.options.timeoutMs / 1000} s: rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${this.options.worldSize} never joined${nodeText}`,
    );
  }

  /** tells every rank (and `also`, a refused newcomer of the job) that the job cannot go on, once */
  private abort(message: string, also?: Socket): void {
    if (also) {
      send(also, { t: 'abort', message });
      closeSoon(also);
    }
    if (this.aborted !== null) return;
    this.aborted = message;
    for (const m of this.members.values()) {
      send(m.socket, { t: 'abort', message });
      m.socket.end();
    }
    this.allBye();
  }
}

export interface StoreClientOptions {
  host: string;
  port: number;
  rank: number;
  worldSize: number;
  /** what this rank proves it knows, and what the store must prove it knows (HCSP_RENDEZVOUS_SECRET) */
  secret: string;
  /** connecting (rank 0 may not be listening yet) and the rendezvous must end within this time */
  timeoutMs: number;
}

/** One rank's connection to the store. */
export class RendezvousClient {
  private readonly pending = new Map<string, Array<(v: string) => void>>();
  private onAbort: (message: string) => void = () => {};
  private abortMessage: string | null = null;
  private byeAck: (() => void) | null = null;
  private leaving = false;

  private constructor(
    private readonly socket: Socket,
    private readonly options: StoreClientOptions,
  ) {}

  /**
   * Connects (retrying while rank 0's store is not up), says hello and waits until every
   * rank has: a RendezvousError names what went wrong (no store, the world, who is missing).
   * `onAbort` is called if the job is aborted later (a peer lost or failed, rank 0 gone).
   */
  static async join(options: StoreClientOptions, onAbort: (message: string) => void): Promise<RendezvousClient> {
    const where = `${options.host}:${options.port}`;
    const deadline = Date.now() + options.timeoutMs;
    let socket: Socket | null = null;
    let lastError = '';
    while (socket === null) {
      try {
        socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect({ host: options.host, port: options.port });
          s.once('connect', () => resolve(s));
          s.once('error', reject);
        });
      } catch (e) {
        lastError = (e as Error).message;
        if (Date.now() + CONNECT_RETRY_MS > deadline) {
          throw new RendezvousError(
            `rank ${options.rank}: no rendezvous store at ${where} after ${options.timeoutMs / 1000} s (${lastError}): rank 0 serves it; is rank 0's node (--node-rank 0) started, with this --master-addr and --master-port?`,
          );
        }
        await new Promise((r) => setTimeout(r, CONNECT_RETRY_MS));
      }
    }
    const client = new RendezvousClient(socket, options);
    try {
      await client.hello(deadline);
    } catch (e) {
      socket.destroy();
      throw e;
    }
    client.onAbort = onAbort;
    if (client.abortMessage !== null) onAbort(client.abortMessage);
    return client;
  }

  get rank(): number {
    return this.options.rank;
  }

  /**
   * Answers the store's challenge with this rank's proof of the secret, and believes the
   * store once it has proved the secret too (its welcome); then waits for every rank.
   */
  private hello(deadline: number): Promise<void> {
    const { socket, options } = this;
    const where = `${options.host}:${options.port}`;
    const nonce = newNonce();
    let storeNonce: string | null = null;
    let welcomed = false;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (e: Error | null): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (e) reject(e);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          settle(
            new RendezvousError(
              `rank ${options.rank}: the rendezvous at ${where} did not complete within ${options.timeoutMs / 1000} s (rank 0 names the missing ranks)`,
            ),
          ),
        timerMs(deadline - Date.now() + 2000),
      );
      const impostor = (): void => {
        settle(
          new RendezvousError(
            `rank ${options.rank}: what answers at ${where} is not this job's rendezvous store (it did not prove that it knows the job's ${SECRET_ENV}): another program on this --master-port?`,
          ),
        );
        socket.destroy();
      };
      readJsonLines(
        socket,
        MAX_LINE,
        (m) => {
          if (!welcomed) {
            if (storeNonce === null && m.t === 'challenge' && m.magic === MAGIC && typeof m.nonce === 'string') {
              storeNonce = m.nonce;
              const { rank, worldSize, secret } = options;
              send(socket, {
                t: 'hello',
                magic: MAGIC,
                rank,
                worldSize,
                host: hostname(),
                pid: process.pid,
                nonce,
                proof: proof(secret, 'hello', MAGIC, storeNonce, nonce, String(rank), String(worldSize)),
              });
            } else if (
              storeNonce !== null &&
              m.t === 'welcome' &&
              sameProof(m.proof, proof(options.secret, 'welcome', MAGIC, nonce, storeNonce, String(options.rank)))
            ) {
              welcomed = true;
            } else if (storeNonce !== null && m.t === 'refused') {
              settle(
                new RendezvousError(
                  `rank ${options.rank}: the rendezvous store at ${where} refused this rank's ${SECRET_ENV}: the port serves another job, or this node's secret is not rank 0's node's`,
                ),
              );
              socket.destroy();
            } else {
              impostor();
            }
            return;
          }
          if (m.t === 'ready') settle(null);
          else if (m.t === 'value') this.deliver(String(m.key), String(m.value));
          else if (m.t === 'byeAck') this.byeAck?.();
          else if (m.t === 'refused') {
            settle(new RendezvousError(`rank ${options.rank}: the rendezvous store at ${where} refused this rank: ${String(m.message)}`));
            socket.destroy();
          } else if (m.t === 'abort') {
            const message = String(m.message);
            if (!settled) settle(new RendezvousError(message, true));
            else this.lost(message);
          }
        },
        (why) => {
          const message = `rank ${options.rank}: the rendezvous store at ${where} sent ${why}`;
          if (!welcomed) impostor();
          else if (!settled) settle(new RendezvousError(message));
          else this.lost(message);
          socket.destroy();
        },
      );
      socket.on('error', () => {});
      socket.on('close', () => {
        const message = `rank ${options.rank}: lost the rendezvous store at ${where}: rank 0 ended`;
        if (!settled) settle(new RendezvousError(message));
        else if (!this.leaving) this.lost(message);
        this.byeAck?.();
      });
    });
  }

  private lost(message: string): void {
    if (this.abortMessage !== null || this.leaving) return;
    this.abortMessage = message;
    this.onAbort(message);
  }

  private deliver(key: string, value: string): void {
    for (const resolve of this.pending.get(key) ?? []) resolve(value);
    this.pending.delete(key);
  }

  set(key: string, value: string): Promise<void> {
    send(this.socket, { t: 'set', key, value });
    return Promise.resolve();
  }

  /** the key's value, once some rank has set it (an abort ends the process first: see onAbort) */
  get(key: string): Promise<string> {
    return new Promise((resolve) => {
      this.pending.set(key, [...(this.pending.get(key) ?? []), resolve]);
      send(this.socket, { t: 'get', key });
    });
  }

  /** bytes this rank has sent through the store since it joined */
  get bytesSent(): number {
    return this.socket.bytesWritten;
  }

  /** every rank's `bytes` under `key`, in rank order (each rank sets its own, then reads all) */
  async gather(key: string, bytes: Uint8Array): Promise<Uint8Array[]> {
    await this.set(`${key}/${this.rank}`, Buffer.from(bytes).toString('base64'));
    const all = await Promise.all(Array.from({ length: this.options.worldSize }, (_, r) => this.get(`${key}/${r}`)));
    return all.map((b) => new Uint8Array(Buffer.from(b, 'base64')));
  }

  /**
   * tells every rank that this one failed (they end with `message`); resolves once the store
   * has passed it on (it then closes this rank's connection), or after a second: rank 0's
   * store runs in rank 0's process, which must not end before it has
   */
  fail(message: string): Promise<void> {
    this.leaving = true;
    return new Promise((resolve) => {
      if (this.socket.destroyed) return resolve();
      const timer = setTimeout(resolve, 1000);
      this.socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      this.socket.write(`${JSON.stringify({ t: 'fail', message })}\n`);
    });
  }

  /** this rank finished: after the acknowledgement its connection may close without alarming anyone */
  async bye(): Promise<void> {
    if (this.socket.destroyed) return;
    const acked = new Promise<void>((resolve) => (this.byeAck = resolve));
    send(this.socket, { t: 'bye' });
    await acked;
    this.leaving = true;
    this.socket.end();
  }
}
