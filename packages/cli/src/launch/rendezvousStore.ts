// The ranks' rendezvous (issue 13): a small key-value store on MASTER_ADDR:MASTER_PORT,
// served by rank 0 as torch's TCPStore is, through which separately started rank processes
// find each other, check that they agree on the world, exchange the few bytes a
// communicator needs to start (Open MPI's server URI and port name, NCCL's unique id), and
// learn that a peer was lost. Every rank, rank 0 included, is a client of the store over TCP.
//
// Written by hand on node:net: no maintained npm package serves a TCPStore-like store, and
// the protocol is a few newline-delimited JSON messages:
//   client -> server: hello {rank, worldSize, host, pid} | set {key, value} | get {key}
//                     | fail {message} | bye
//   server -> client: ready (every rank said hello) | value {key, value}
//                     | abort {message} (the job cannot go on: who is missing, who was lost)
//                     | byeAck
// Liveness: a rank whose connection closes before its bye was lost (crashed or killed): the
// server tells every other rank, naming it, and they end. A rank that loses the store has
// lost rank 0.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { hostname } from 'node:os';

const MAGIC = 'hcsp-rendezvous/1';
/** how often a client retries while rank 0's store is not listening yet */
const CONNECT_RETRY_MS = 100;

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

type Message = Record<string, unknown> & { t: string };

/** newline-delimited JSON on a socket */
function lines(socket: Socket, onMessage: (m: Message) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      let m: unknown;
      try {
        m = JSON.parse(line);
      } catch {
        socket.destroy(new Error(`not a rendezvous message: ${JSON.stringify(line.slice(0, 80))}`));
        return;
      }
      if (typeof m === 'object' && m !== null && typeof (m as Message).t === 'string') onMessage(m as Message);
      else socket.destroy(new Error('not a rendezvous message'));
    }
  });
}

function send(socket: Socket, m: Message): void {
  if (!socket.destroyed) socket.write(JSON.stringify(m) + '\n');
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
  /** every rank must say hello within this time of the server starting */
  timeoutMs: number;
  /** LOCAL_WORLD_SIZE when every node runs as many ranks: lets a timeout name the missing nodes */
  ranksPerNode?: number;
}

/** The store, served in rank 0's process. */
export class RendezvousServer {
  private readonly members = new Map<number, Member>();
  private readonly values = new Map<string, string>();
  private readonly waiting = new Map<string, Socket[]>();
  private ready = false;
  private aborted: string | null = null;
  private timer: NodeJS.Timeout;
  private allBye: () => void = () => {};
  private readonly finished: Promise<void>;

  private constructor(
    private readonly server: Server,
    private readonly options: StoreServerOptions,
  ) {
    this.finished = new Promise((resolve) => (this.allBye = resolve));
    this.timer = setTimeout(() => this.timeout(), options.timeoutMs);
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
          reject(new RendezvousError(`rank 0 cannot serve the rendezvous store: MASTER_PORT ${options.port} on ${options.host} is in use (another job, or a second node started with --node-rank 0?): choose another --master-port`));
        } else if (e.code === 'EADDRNOTAVAIL') {
          reject(new RendezvousError(`rank 0 cannot serve the rendezvous store at ${where}: MASTER_ADDR ${options.host} is not an address of this machine (${hostname()}); rank 0 runs on the node with --node-rank 0`));
        } else {
          reject(new RendezvousError(`rank 0 cannot serve the rendezvous store at ${where}: ${e.message}`));
        }
      });
      server.listen({ host: options.host, port: options.port, exclusive: true }, () => resolve(new RendezvousServer(server, options)));
    });
  }

  /** resolves once every rank said bye (or the job was aborted); then the server closes */
  async closeWhenDone(): Promise<void> {
    await this.finished;
    clearTimeout(this.timer);
    for (const m of this.members.values()) m.socket.end();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** ends the store at once (rank 0 failing): the others see it gone */
  destroy(): void {
    clearTimeout(this.timer);
    for (const m of this.members.values()) m.socket.destroy();
    this.server.close();
    this.allBye();
  }

  private who(rank: number): string {
    const m = this.members.get(rank);
    return m ? `rank ${rank} (pid ${m.pid} on ${m.host})` : `rank ${rank}`;
  }

  private accept(socket: Socket): void {
    let rank: number | null = null;
    socket.on('error', () => {});
    lines(socket, (m) => {
      if (rank === null) {
        rank = this.hello(socket, m);
        return;
      }
      this.message(rank, socket, m);
    });
    socket.on('close', () => {
      if (rank === null) return;
      const member = this.members.get(rank);
      if (!member || member.socket !== socket) return;
      if (!member.bye) this.abort(`${this.who(rank)} was lost: its connection to the rendezvous store closed before it finished (it crashed or was killed)`);
    });
  }

  /** a new connection's first message: its rank, checked against the world; null when refused */
  private hello(socket: Socket, m: Message): number | null {
    if (m.t !== 'hello' || m.magic !== MAGIC) {
      socket.destroy();
      return null;
    }
    const rank = m.rank as number;
    const worldSize = m.worldSize as number;
    const host = String(m.host);
    const pid = Number(m.pid);
    if (this.aborted !== null) {
      send(socket, { t: 'abort', message: this.aborted });
      socket.end();
      return null;
    }
    if (worldSize !== this.options.worldSize) {
      this.abort(`the ranks disagree on the world size: rank ${rank} (pid ${pid} on ${host}) has WORLD_SIZE ${worldSize}, rank 0 has ${this.options.worldSize} (every node's launcher needs the same --nnodes and --nproc-per-node)`, socket);
      return null;
    }
    if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize) {
      this.abort(`rank ${rank} (pid ${pid} on ${host}) is outside the world of ${worldSize}`, socket);
      return null;
    }
    const twin = this.members.get(rank);
    if (twin) {
      this.abort(`rank ${rank} joined twice: pid ${twin.pid} on ${twin.host} and pid ${pid} on ${host} (two nodes started with the same --node-rank?)`, socket);
      return null;
    }
    this.members.set(rank, { socket, host, pid, bye: false });
    if (this.members.size === worldSize) {
      this.ready = true;
      clearTimeout(this.timer);
      for (const member of this.members.values()) send(member.socket, { t: 'ready' });
    }
    return rank;
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
    const nodeText = nodes.length > 0 ? ` (node-rank${nodes.length > 1 ? 's' : ''} ${nodes.join(', ')}: ${nodes.length > 1 ? 'are their launchers' : 'is its launcher'} started, with the same --master-addr and --master-port?)` : '';
    this.abort(`the rendezvous timed out after ${this.options.timeoutMs / 1000} s: rank${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${this.options.worldSize} never joined${nodeText}`);
  }

  /** tells every rank (and `also`, a refused newcomer) that the job cannot go on, once */
  private abort(message: string, also?: Socket): void {
    if (also) {
      send(also, { t: 'abort', message });
      also.end();
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
    await client.hello(deadline);
    client.onAbort = onAbort;
    if (client.abortMessage !== null) onAbort(client.abortMessage);
    return client;
  }

  get rank(): number {
    return this.options.rank;
  }

  private hello(deadline: number): Promise<void> {
    const { socket, options } = this;
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
        () => settle(new RendezvousError(`rank ${options.rank}: the rendezvous at ${options.host}:${options.port} did not complete within ${options.timeoutMs / 1000} s (rank 0 names the missing ranks)`)),
        Math.max(0, deadline - Date.now()) + 2000,
      );
      lines(socket, (m) => {
        if (m.t === 'ready') settle(null);
        else if (m.t === 'value') this.deliver(String(m.key), String(m.value));
        else if (m.t === 'byeAck') this.byeAck?.();
        else if (m.t === 'abort') {
          const message = String(m.message);
          if (!settled) settle(new RendezvousError(message, true));
          else this.lost(message);
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        const message = `rank ${options.rank}: lost the rendezvous store at ${options.host}:${options.port}: rank 0 ended`;
        if (!settled) settle(new RendezvousError(message));
        else if (!this.leaving) this.lost(message);
        this.byeAck?.();
      });
      send(socket, { t: 'hello', magic: MAGIC, rank: options.rank, worldSize: options.worldSize, host: hostname(), pid: process.pid });
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
      this.socket.write(JSON.stringify({ t: 'fail', message }) + '\n');
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
