import type { Graph, RunOptions, RunResult, Tensor, ValueId, WeightSource } from '@hcsp/core';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CHROMIUM_EXECUTABLE, CHROMIUM_WEBGPU_ARGS } from '@hcsp/kernels-wgsl/chromium';
import { chromium, type Browser, type BrowserServer, type Page } from 'playwright-core';
import { hostTensor } from './hostTensors.ts';
import { pageBundle, WGSL_KERNEL_MODULE, type KernelModule } from './pageBundle.ts';
import { type PageApi, type PageJob, type PageRunSummary } from './pageProtocol.ts';
import { tensorFromWordBytes, tensorWordBytes } from './tensorBytes.ts';


export type ChromiumHostFailure = 'no-chromium' | 'launch-failed' | 'no-webgpu';

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

interface Job {
  graph: Graph;
  feeds: Map<ValueId, Tensor>;
  weights: WeightSource;
  keep?: ValueId[] | 'all';
  results: Map<ValueId, Buffer>;
  onNode?: (done: number, total: number) => void;
}

/** Rejects after `ms` with an Error naming what timed out. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`chromium host: ${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
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
 * WebGpuExecutor on navigator.gpu and POSTs the results back. Every wait has a timeout, and
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
  // one run at a time: page errors and progress are attributed to the current run
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly server: Server,
    private browserServer: BrowserServer | null,
    private page: Page | null,
    readonly adapter: string,
    private readonly runTimeoutMs: number,
  ) {}

  static async launch(options: ChromiumHostOptions = {}): Promise<ChromiumHost> {
    const executablePath = options.executablePath ?? CHROMIUM_EXECUTABLE;
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
    let browserServer: BrowserServer | null = null;
    let browser: Browser | null = null;
    try {
      try {
        browserServer = await chromium.launchServer({ executablePath, args: CHROMIUM_WEBGPU_ARGS, headless: true, timeout: startMs });
        browser = await chromium.connect(browserServer.wsEndpoint(), { timeout: startMs });
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
        adapter = await within(page.evaluate(() => (window as unknown as PageApi).hcspInit()), startMs, 'requesting the WebGPU device');
      } catch (e) {
        const extra = early.length > 0 ? `; page errors: ${early.join('; ')}` : '';
        throw new ChromiumHostError('no-webgpu', `no WebGPU adapter in headless Chromium (flags ${CHROMIUM_WEBGPU_ARGS.join(' ')}): ${(e as Error).message}${extra}`);
      }
      const self = new ChromiumHost(server, browserServer, page, adapter, options.runTimeoutMs ?? 30 * 60_000);
      host.current = self;
      await self.watch(page, browser);
      return self;
    } catch (e) {
      await browserServer?.kill().catch(() => {});
      server.close();
      throw e;
    }
  }

  /** Runs a graph in the page; results come back as raw bytes over HTTP. */
  run(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options: ChromiumRunOptions = {}): Promise<RunResult> {
    const result = this.queue.then(() => this.runNow(graph, feeds, weights, options));
    this.queue = result.catch(() => {});
    return result;
  }

  private async runNow(graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, options: ChromiumRunOptions): Promise<RunResult> {
    if (this.closed) throw new Error('chromium host: run() after close()');
    if (this.failure) throw this.failure;
    const page = this.page!;
    const id = String(this.nextJob++);
    const job: Job = { graph, feeds, weights, keep: options.keep, results: new Map(), onNode: options.onNode };
    this.jobs.set(id, job);
    this.pageErrors = [];
    let removeListener = (): void => {};
    const failed = new Promise<never>((_, reject) => {
      const listener = (e: Error): void => reject(e);
      this.failListeners.add(listener);
      removeListener = () => this.failListeners.delete(listener);
    });
    const timeoutMs = options.timeoutMs ?? this.runTimeoutMs;
    try {
      const evaluated = page.evaluate(([j, progress]) => (window as unknown as PageApi).hcspRun(j, progress), [id, options.onNode !== undefined] as const);
      evaluated.catch(() => {}); // when a crash or the timeout wins the race, its rejection is expected
      let summary: PageRunSummary;
      try {
        summary = await within(Promise.race([evaluated, failed]), timeoutMs, `run of job ${id} (${graph.nodes.length} nodes)`);
      } catch (e) {
        if (/timed out/.test((e as Error).message)) await this.close(); // the page is in an unknown state
        throw new Error(`${cleanEvaluateError(e as Error).message}${this.pageErrorSuffix()}`);
      }
      if (this.pageErrors.length > 0) throw new Error(`chromium host: the page logged errors during the run${this.pageErrorSuffix()}`);
      const values = new Map<ValueId, Tensor>();
      for (const vid of summary.posted) {
        const bytes = job.results.get(vid);
        if (!bytes) throw new Error(`chromium host: the page reported result '${vid}' but never posted it`);
        const d = graph.values[vid];
        values.set(vid, tensorFromWordBytes(d.dtype, d.shape, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
      }
      return { values, stats: summary.stats };
    } finally {
      removeListener();
      this.jobs.delete(id);
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
    const m = /^\/job\/([^/]+)\/(graph|tensor|result)(?:\/([^/]+))?$/.exec(url);
    const job = m ? this.jobs.get(decodeURIComponent(m[1])) : undefined;
    if (!m || !job) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no such resource: ${url}`);
      return;
    }
    const kind = m[2];
    const valueId = m[3] === undefined ? undefined : decodeURIComponent(m[3]);
    if (kind === 'graph' && req.method === 'GET') {
      const body: PageJob = { graph: job.graph, keep: job.keep };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    } else if (kind === 'tensor' && req.method === 'GET' && valueId !== undefined) {
      const bytes = tensorWordBytes(hostTensor(job.graph, job.feeds, job.weights, valueId));
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength });
      res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    } else if (kind === 'result' && req.method === 'POST' && valueId !== undefined) {
      job.results.set(valueId, await readBody(req));
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
