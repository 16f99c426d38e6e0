import {
  refuseTorchCpuTies,
  validateFeeds,
  type Graph,
  type PreparedGraph,
  type RunOptions,
  type RunResult,
  type Tensor,
  type ValueId,
  type WeightSource,
} from '@hcsp/core';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumExecutable, CHROMIUM_WEBGPU_ARGS } from './chromiumFlags.ts';
import { chromium, type Browser, type BrowserServer, type Page } from 'playwright-core';
import { hostTensor } from './hostTensors.ts';
import { pageBundle, WGSL_KERNEL_MODULE, type KernelModule } from './pageBundle.ts';
import type { PageApi, PageJob, PageRunOptions, WirePlan } from './pageProtocol.ts';
import type { KernelPlan } from '@hcsp/kernels-wgsl';
import { tensorFromWordBytes, tensorWordBytes } from './tensorBytes.ts';
import { readSizedBody } from './sizedBody.ts';

export type ChromiumHostFailure = 'no-chromium' | 'launch-failed' | 'no-webgpu' | 'interrupted';

export class ChromiumHostError extends Error {
  constructor(
    readonly reason: ChromiumHostFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ChromiumHostError';
  }
}

export interface ChromiumHostOptions {
  executablePath?: string;
  /** the kernel table bundled into the page (default: WGSL_KERNELS of @hcsp/kernels-wgsl) */
  kernels?: KernelModule;
  /** limit for starting the browser and getting a device (default 60 s) */
  startTimeoutMs?: number;
  /** limit for one run (default 30 min: full-size graphs on SwiftShader are slow) */
  runTimeoutMs?: number;
}

export interface ChromiumRunOptions extends RunOptions {
  timeoutMs?: number;
}

/** Where one run's wall time went, for benchmarks (see lastRunSeconds()). */
export interface ChromiumRunSeconds {
  /** Node's clock: prepared.run's page call, from the call to the page's answer */
  total: number;
  /** the page's clock: the session's run (kernels and GPU readback) and the result POSTs */
  pageRun: number;
  pagePost: number;
  /** Node's clock: receiving the result bodies */
  nodeReceive: number;
  postedBytes: number;
}

/** What the page fetches for one job (a prepared graph, or one raw plan) and what it posts back. */
interface Job {
  /** the graph the page fetches (a raw plan's job has none) */
  graph: Graph | null;
  /** the word-layout bytes of an input, weight or plan input the page asks for (some rows of a row-gathered weight) */
  tensor(id: ValueId, rows?: [number, number][]): Promise<Uint8Array>;
  results: Map<ValueId, Buffer>;
  onNode?: (done: number, total: number) => void;
}

// Every temp path of one browser (Playwright's profile and artifacts folders, Chromium's own
// temp files) lives in one folder named after this host and process: removed on close, on
// process exit and on SIGINT/SIGTERM/SIGHUP, and by a later launch when SIGKILL left it.
const TEMP_PREFIX = `hcsp-chromium-${hostname()}-`;
const INTERRUPT_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Whether a process exists: signal 0 checks without sending (EPERM: it exists, another user's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temp folders of this machine's hosts whose process is gone, returning their
 * paths. The host name in the folder name keeps a container sharing /tmp from judging
 * another's pids.
 */
export function sweepStaleChromiumTemp(dir: string = tmpdir()): string[] {
  const removed: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(TEMP_PREFIX)) continue;
    const pid = Number(/^(\d+)-/.exec(name.slice(TEMP_PREFIX.length))?.[1]);
    if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    rmSync(join(dir, name), { recursive: true, force: true, maxRetries: 3 });
    removed.push(join(dir, name));
  }
  return removed;
}

/** One launch's temp folder, and what kills its browser when the process is interrupted or exits. */
class HostTempFolder {
  private static readonly live = new Set<HostTempFolder>();
  readonly path: string;
  interruptedBy: NodeJS.Signals | null = null;
  private browserPid: number | undefined;
  private onInterrupt: (signal: NodeJS.Signals) => void = () => {};

  constructor() {
    sweepStaleChromiumTemp();
    this.path = mkdtempSync(join(tmpdir(), `${TEMP_PREFIX}${process.pid}-`));
    if (HostTempFolder.live.size === 0) {
      process.on('exit', HostTempFolder.onExit);
      for (const s of INTERRUPT_SIGNALS) process.on(s, HostTempFolder.onSignal);
    }
    HostTempFolder.live.add(this);
  }

  /** The browser to kill (its process group: Playwright starts it detached) when the process ends abruptly. */
  watch(browserPid: number | undefined, onInterrupt: (signal: NodeJS.Signals) => void): void {
    this.browserPid = browserPid;
    this.onInterrupt = onInterrupt;
  }

  /** Kills the browser (if still watched) and removes the folder; synchronous, so it also runs on 'exit'. */
  remove(): void {
    if (this.browserPid !== undefined) {
      try {
        process.kill(-this.browserPid, 'SIGKILL');
      } catch {
        // already gone
      }
      this.browserPid = undefined;
    }
    rmSync(this.path, { recursive: true, force: true, maxRetries: 3 });
    HostTempFolder.live.delete(this);
    if (HostTempFolder.live.size === 0) {
      process.off('exit', HostTempFolder.onExit);
      for (const s of INTERRUPT_SIGNALS) process.off(s, HostTempFolder.onSignal);
    }
  }

  private static onExit = (): void => {
    for (const f of [...HostTempFolder.live]) f.remove();
  };

  private static onSignal = (signal: NodeJS.Signals): void => {
    const others = process.listenerCount(signal) > 1;
    for (const f of [...HostTempFolder.live]) {
      f.interruptedBy = signal;
      f.remove();
      f.onInterrupt(signal);
    }
    // Nobody else handles the signal: with this listener gone its default action is back,
    // so re-raising ends the process the way the signal means.
    if (!others) process.kill(process.pid, signal);
  };
}

/** Runs `work` with os.tmpdir() (read by Playwright when it makes the profile) pointing into `dir`. */
async function withTmpdir<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await work();
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** Rejects after `ms` with an Error naming what timed out. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`chromium host: ${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** a POSTed row-range list: [[start, end], ...] of non-negative integers, start < end */
function rowRanges(body: Buffer): [number, number][] {
  let v: unknown;
  try {
    v = JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('row ranges: the body is not JSON');
  }
  const ok = Array.isArray(v) && v.every((r) => Array.isArray(r) && r.length === 2 && r.every((x) => Number.isSafeInteger(x) && x >= 0) && r[0] < r[1]);
  if (!ok) throw new Error('row ranges: expected [[start, end], ...] with integers 0 <= start < end');
  return v as [number, number][];
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Headless Chromium as the WebGPU device host where dawn.node has no hardware adapter. A
 * local HTTP server on 127.0.0.1 serves the page (pageRunner.ts bundled with the executor
 * and kernels), the graph, and every input and weight as raw bytes; the page runs the
 * prepared graphs on navigator.gpu (core's GraphSession over a WebGpuDevice) and POSTs the
 * results back. Every wait has a timeout, and
 * close() kills the browser process.
 */
export class ChromiumHost {
  private readonly jobs = new Map<string, Job>();
  private nextJob = 0;
  private failure: Error | null = null;
  private failListeners = new Set<(e: Error) => void>();
  /** console errors and uncaught page exceptions since the last run began */
  private pageErrors: string[] = [];
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();
  /** Node's time receiving result bodies (from their headers to their last byte), summed over the current run */
  private receiveSeconds = 0;
  private lastTimes: ChromiumRunSeconds | null = null;

  private constructor(
    private readonly server: Server,
    private browserServer: BrowserServer | null,
    private page: Page | null,
    readonly adapter: string,
    private readonly runTimeoutMs: number,
    private readonly tempFolder: HostTempFolder,
  ) {}

  static async launch(options: ChromiumHostOptions = {}): Promise<ChromiumHost> {
    const executablePath = options.executablePath ?? chromiumExecutable();
    const startMs = options.startTimeoutMs ?? 60_000;
    if (!existsSync(executablePath)) {
      throw new ChromiumHostError('no-chromium', `chromium host: no Chromium at ${executablePath} (run 'npm run setup:system' to install Debian's chromium)`);
    }
    const bundle = await pageBundle(options.kernels ?? WGSL_KERNEL_MODULE);
    const host: { current: ChromiumHost | null } = { current: null };
    const server = createServer((req, res) => {
      if (req.url === '/') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<!doctype html><meta charset="utf-8"><title>hcsp webgpu host</title><script type="module" src="/page.js"></script>');
      } else if (req.url === '/page.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end(bundle);
      } else if (req.url === '/favicon.ico') {
        res.writeHead(204); // no console error for the browser's automatic favicon request
        res.end();
      } else if (host.current) {
        host.current.serve(req, res);
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await within(new Promise<void>((resolve, reject) => server.listen(0, '127.0.0.1', resolve).once('error', reject)), startMs, 'starting the HTTP server');
    const port = (server.address() as AddressInfo).port;
    const folder = new HostTempFolder();
    let browserServer: BrowserServer | null = null;
    let browser: Browser | null = null;
    try {
      try {
        // Playwright's own signal handlers are off: they closed the browser on SIGTERM and let
        // the run fail as "browser has been closed"; HostTempFolder handles the signals.
        const launched = await withTmpdir(folder.path, () =>
          chromium.launchServer({
            executablePath,
            args: CHROMIUM_WEBGPU_ARGS,
            headless: true,
            timeout: startMs,
            env: { ...process.env, TMPDIR: folder.path },
            handleSIGINT: false,
            handleSIGTERM: false,
            handleSIGHUP: false,
          }),
        );
        browserServer = launched;
        folder.watch(launched.process().pid, (signal) => host.current?.fail(new ChromiumHostError('interrupted', `chromium host: interrupted by ${signal}`)));
        browser = await chromium.connect(launched.wsEndpoint(), { timeout: startMs });
      } catch (e) {
        throw new ChromiumHostError('launch-failed', `chromium host: launching ${executablePath} failed: ${(e as Error).message}`);
      }
      const page = await within(browser.newPage(), startMs, 'opening a page');
      const early: string[] = [];
      page.on('console', (m) => m.type() === 'error' && early.push(m.text()));
      page.on('pageerror', (e) => early.push(e.message));
      await page.goto(`http://127.0.0.1:${port}/`, { timeout: startMs });
      let adapter: string;
      try {
        await page.waitForFunction(() => typeof (window as unknown as Partial<PageApi>).hcspInit === 'function', undefined, { timeout: startMs });
        adapter = await within(
          page.evaluate(() => (window as unknown as PageApi).hcspInit()),
          startMs,
          'requesting the WebGPU device',
        );
      } catch (e) {
        const extra = early.length > 0 ? `; page errors: ${early.join('; ')}` : '';
        throw new ChromiumHostError(
          'no-webgpu',
          `no WebGPU adapter in headless Chromium (flags ${CHROMIUM_WEBGPU_ARGS.join(' ')}): ${(e as Error).message}${extra}`,
        );
      }
      const self = new ChromiumHost(server, browserServer, page, adapter, options.runTimeoutMs ?? 30 * 60_000, folder);
      host.current = self;
      await self.watch(page, browser);
      if (folder.interruptedBy) throw new ChromiumHostError('interrupted', `chromium host: interrupted by ${folder.interruptedBy} while starting`);
      return self;
    } catch (e) {
      await browserServer?.kill().catch(() => {});
      folder.remove();
      server.close();
      // What failed after a signal killed the browser is the signal's doing, not the browser's.
      if (folder.interruptedBy) throw new ChromiumHostError('interrupted', `chromium host: interrupted by ${folder.interruptedBy} while starting`);
      throw e;
    }
  }

  /** Sends the graph to the page, which uploads its weights once; the result runs many times. */
  async prepare(graph: Graph, weights: WeightSource): Promise<PreparedGraph> {
    refuseTorchCpuTies(graph, 'webgpu');
    const id = String(this.nextJob++);
    let feeds: ReadonlyMap<ValueId, Tensor> = new Map();
    const job: Job = { graph, tensor: async (vid, rows) => tensorWordBytes(await hostTensor(graph, feeds, weights, vid, rows)), results: new Map() };
    const setFeeds = (f: ReadonlyMap<ValueId, Tensor>): void => {
      feeds = f;
    };
    this.jobs.set(id, job);
    try {
      await this.serialized(() =>
        this.inPage(`preparing job ${id} (${graph.nodes.length} nodes)`, (page) => page.evaluate((j) => (window as unknown as PageApi).hcspPrepare(j), id)),
      );
    } catch (e) {
      this.jobs.delete(id);
      throw e;
    }
    let disposed = false;
    const alive = (): void => {
      if (disposed) throw new Error(`chromium host: job ${id} used after dispose()`);
    };
    return {
      graph,
      run: (feeds, options = {}) => {
        alive();
        return this.serialized(async () => {
          validateFeeds(graph, feeds);
          setFeeds(feeds);
          try {
            return await this.runJob(id, job, graph, options);
          } finally {
            setFeeds(new Map());
          }
        });
      },
      read: (vid) => {
        alive();
        return this.serialized(async () => {
          job.results.clear();
          await this.inPage(`reading '${vid}' of job ${id}`, (page) =>
            page.evaluate(([j, v]) => (window as unknown as PageApi).hcspRead(j, v), [id, vid] as const),
          );
          return this.result(job, graph, vid);
        });
      },
      dispose: async () => {
        if (disposed) return;
        disposed = true;
        // after the runs and reads already queued, which still fetch this job's tensors
        await this.serialized(async () => {
          try {
            if (!this.closed && !this.failure)
              await this.inPage(`disposing job ${id}`, (page) => page.evaluate((j) => (window as unknown as PageApi).hcspDispose(j), id));
          } finally {
            this.jobs.delete(id);
          }
        }).catch(() => {});
      },
    };
  }

  /** One call at a time: page errors and progress are attributed to the current call. */
  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.queue.then(fn);
    this.queue = result.catch(() => {});
    return result;
  }

  /**
   * Runs one KernelPlan on raw words in the page, through the backend's own WebGpuDevice
   * (the kernel tests' and kernel benchmarks' path to the GPU).
   */
  runPlan(plan: KernelPlan, inputs: (Uint32Array | null)[], outputWords: number[], reps = 1): Promise<{ outputs: Uint32Array[]; seconds: number[] }> {
    return this.serialized(async () => {
      const id = `plan${this.nextJob++}`;
      const job: Job = {
        graph: null,
        tensor: async (vid) => {
          const w = inputs[Number(vid)];
          if (!w) throw new Error(`plan input ${vid} is absent`);
          return new Uint8Array(w.buffer, w.byteOffset, w.byteLength);
        },
        results: new Map(),
      };
      this.jobs.set(id, job);
      try {
        const wire: WirePlan = { scratch: plan.scratch, dispatches: plan.dispatches.map((d) => ({ ...d, uniforms: Array.from(d.uniforms) })) };
        const seconds = await this.inPage(`plan ${id}`, (page) =>
          page.evaluate(([j, p, present, words, r]) => (window as unknown as PageApi).hcspRunPlan(j, p, present, words, r), [
            id,
            wire,
            inputs.map((w) => w !== null),
            outputWords,
            reps,
          ] as const),
        );
        const outputs = outputWords.map((w, i) => {
          const b = job.results.get(String(i));
          if (!b || b.byteLength < w * 4) throw new Error(`chromium host: plan output ${i} came back with ${b?.byteLength ?? 0} bytes, expected ${w * 4}`);
          const out = new Uint32Array(w);
          new Uint8Array(out.buffer).set(b.subarray(0, w * 4));
          return out;
        });
        return { outputs, seconds };
      } finally {
        this.jobs.delete(id);
      }
    });
  }

  /** Where the last completed prepared.run's time went (null before one). */
  lastRunSeconds(): ChromiumRunSeconds | null {
    return this.lastTimes;
  }

  /** null when the WGSL compiles into a compute pipeline in the page, else the messages. */
  compileErrors(wgsl: string): Promise<string | null> {
    return this.serialized(() => this.inPage('a compile check', (page) => page.evaluate((w) => (window as unknown as PageApi).hcspCompileErrors(w), wgsl)));
  }

  private async runJob(id: string, job: Job, graph: Graph, options: ChromiumRunOptions): Promise<RunResult> {
    job.results.clear();
    job.onNode = options.onNode;
    try {
      const runOptions: PageRunOptions = { keep: options.keep, keepOnDevice: options.keepOnDevice, reportProgress: options.onNode !== undefined };
      this.receiveSeconds = 0;
      const t0 = performance.now();
      const summary = await this.inPage(
        `run of job ${id} (${graph.nodes.length} nodes)`,
        (page) => page.evaluate(([j, o]) => (window as unknown as PageApi).hcspRun(j, o), [id, runOptions] as const),
        options.timeoutMs,
      );
      const p = summary.pageSeconds;
      this.lastTimes = {
        total: (performance.now() - t0) / 1000,
        pageRun: p.run,
        pagePost: p.post,
        nodeReceive: this.receiveSeconds,
        postedBytes: p.postedBytes,
      };
      const values = new Map<ValueId, Tensor>();
      for (const vid of summary.posted) values.set(vid, this.result(job, graph, vid));
      return { values, stats: summary.stats };
    } finally {
      job.onNode = undefined;
    }
  }

  private result(job: Job, graph: Graph, vid: ValueId): Tensor {
    const bytes = job.results.get(vid);
    if (!bytes) throw new Error(`chromium host: the page reported result '${vid}' but never posted it`);
    const d = graph.values[vid];
    return tensorFromWordBytes(d.dtype, d.shape, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  /**
   * One page call, raced against a page/GPU crash and a timeout; page errors logged during
   * it fail it. A timeout closes the host: the page is then in an unknown state.
   */
  private async inPage<T>(what: string, call: (page: Page) => Promise<T>, timeoutMs = this.runTimeoutMs): Promise<T> {
    if (this.closed) throw new Error('chromium host: used after close()');
    if (this.failure) throw this.failure;
    const page = this.page!;
    this.pageErrors = [];
    let removeListener = (): void => {};
    const failed = new Promise<never>((_, reject) => {
      const listener = (e: Error): void => reject(e);
      this.failListeners.add(listener);
      removeListener = () => this.failListeners.delete(listener);
    });
    try {
      const evaluated = call(page);
      evaluated.catch(() => {}); // when a crash or the timeout wins the race, its rejection is expected
      let value: T;
      try {
        value = await within(Promise.race([evaluated, failed]), timeoutMs, what);
      } catch (e) {
        if (/timed out/.test((e as Error).message)) await this.close();
        throw new Error(`${cleanEvaluateError(e as Error).message}${this.pageErrorSuffix()}`);
      }
      if (this.pageErrors.length > 0) throw new Error(`chromium host: the page logged errors during ${what}${this.pageErrorSuffix()}`);
      return value;
    } finally {
      removeListener();
    }
  }

  /**
   * Test seam, for chromiumHostFailures.test.ts only: the page (to crash it, its device or
   * the GPU process) and the browser's pid (to check it was killed). Null after close().
   */
  debugHandles(): { page: Page; browserPid: number | undefined } | null {
    if (!this.page || !this.browserServer) return null;
    return { page: this.page, browserPid: this.browserServer.process().pid };
  }

  /** Kills the browser and stops the server; safe to call more than once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.fail(new Error('chromium host: closed'));
    const bs = this.browserServer;
    this.browserServer = null;
    this.page = null;
    // kill(), not close(): a hung GPU process must not keep close() waiting.
    if (bs) await within(bs.kill(), 10_000, 'killing Chromium').catch(() => {});
    this.tempFolder.remove();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async watch(page: Page, browser: Browser): Promise<void> {
    page.on('console', (m) => {
      if (m.type() === 'error') this.pageErrors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => this.pageErrors.push(`uncaught: ${e.message}`));
    page.on('crash', () => this.fail(new Error('chromium host: the page crashed (renderer or GPU process died)')));
    browser.on('disconnected', () => this.fail(new Error('chromium host: the browser disconnected')));
    // awaited here: a browser closed right after launch must reject launch(), not leave an
    // unhandled rejection behind
    await page.exposeFunction('hcspProgress', (done: number, total: number) => {
      for (const job of this.jobs.values()) job.onNode?.(done, total);
    });
  }

  private fail(e: Error): void {
    if (!this.failure) this.failure = e;
    for (const l of this.failListeners) l(e);
    this.failListeners.clear();
  }

  private pageErrorSuffix(): string {
    return this.pageErrors.length > 0 ? `\npage errors:\n${this.pageErrors.join('\n')}` : '';
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    void this.handle(req, res).catch((e: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(e.message);
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? '/';
    const m = /^\/job\/([^/?]+)\/(graph|tensor|result)(?:\/([^/?]+))?$/.exec(url);
    const job = m ? this.jobs.get(decodeURIComponent(m[1])) : undefined;
    if (!m || !job) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no such resource: ${url}`);
      return;
    }
    const kind = m[2];
    const valueId = m[3] === undefined ? undefined : decodeURIComponent(m[3]);
    if (kind === 'graph' && req.method === 'GET' && job.graph) {
      const body: PageJob = { graph: job.graph };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    } else if (kind === 'tensor' && (req.method === 'GET' || req.method === 'POST') && valueId !== undefined) {
      // POST: the row ranges of a row-gathered weight, as a JSON body [[start, end], ...]
      const rows = req.method === 'POST' ? rowRanges(await readBody(req)) : undefined;
      const bytes = await job.tensor(valueId, rows);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength });
      res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    } else if (kind === 'result' && req.method === 'POST' && valueId !== undefined) {
      const t0 = performance.now();
      const body = await readSizedBody(req, `chromium host: result '${valueId}' of job ${m[1]}`);
      this.receiveSeconds += (performance.now() - t0) / 1000;
      job.results.set(valueId, body);
      res.writeHead(204);
      res.end();
    } else {
      res.writeHead(405, { 'content-type': 'text/plain' });
      res.end(`${req.method} not allowed on ${url}`);
    }
  }
}

/** Playwright wraps page errors as "page.evaluate: Error: <message>\n    at <page stack>"; keep the message. */
function cleanEvaluateError(e: Error): Error {
  const message = e.message
    .replace(/^(page\.evaluate: |Error: )+/, '')
    .split('\n')
    .filter((l) => !/^\s+at /.test(l))
    .join('\n');
  return new Error(message);
}
