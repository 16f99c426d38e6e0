// A minimal WebGPU device host for developing and testing the kernels on a machine without
// a GPU: headless Chromium (its WebGPU adapter is SwiftShader) on a page served from
// 127.0.0.1, since navigator.gpu is not exposed on about:blank. It runs a KernelPlan on
// given word buffers and returns the output words.
import { CHROMIUM_EXECUTABLE, CHROMIUM_WEBGPU_ARGS } from './chromiumFlags.ts';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { KernelPlan } from '../kernelProgram.ts';
import { PAGE_RUNNER_JS } from './pageRunner.ts';

export interface PlanRun {
  outputs: Uint32Array[];
  /** wall seconds of each repetition of the whole plan (submit to onSubmittedWorkDone) */
  seconds: number[];
}

export interface ChromiumGpu {
  adapterInfo(): Promise<string>;
  /** null when the WGSL compiles and makes a valid compute pipeline, else the errors */
  compileErrors(wgsl: string): Promise<string | null>;
  /**
   * Runs `plan` with inputs bound to the input ports (null = absent port) and outputs of
   * the given sizes in u32 words; `reps` > 1 repeats the plan for timing.
   */
  runPlan(plan: KernelPlan, inputs: (Uint32Array | null)[], outputWords: number[], reps?: number): Promise<PlanRun>;
  close(): Promise<void>;
}

export async function launchChromiumGpu(): Promise<ChromiumGpu> {
  const blobs = new Map<string, Buffer>();
  let nextBlob = 0;
  const server: Server = createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>hcsp kernels</title><script src="/runner.js"></script>');
    } else if (url === '/runner.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(PAGE_RUNNER_JS);
    } else if (url.startsWith('/blob/') && req.method === 'GET') {
      const b = blobs.get(url.slice(6));
      if (!b) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(b);
    } else if (url.startsWith('/blob/') && req.method === 'POST') {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        blobs.set(url.slice(6), Buffer.concat(parts));
        res.writeHead(200).end();
      });
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  let browser: Browser;
  let page: Page;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM_EXECUTABLE, args: CHROMIUM_WEBGPU_ARGS, headless: true });
    page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.waitForFunction('typeof window.hcspRun === "function"');
  } catch (e) {
    server.close();
    throw new Error(`launchChromiumGpu: could not start ${CHROMIUM_EXECUTABLE} with WebGPU: ${(e as Error).message}`);
  }

  const putBlob = (words: Uint32Array): string => {
    const id = `b${nextBlob++}`;
    blobs.set(id, Buffer.from(words.buffer, words.byteOffset, words.byteLength));
    return id;
  };

  return {
    adapterInfo: () => page.evaluate('window.hcspAdapterInfo()') as Promise<string>,
    compileErrors: (wgsl) => page.evaluate(([w]) => (window as any).hcspCompileErrors(w), [wgsl]),
    async runPlan(plan, inputs, outputWords, reps = 1) {
      const inputIds = inputs.map((w) => (w ? putBlob(w) : null));
      const outputIds = outputWords.map(() => `o${nextBlob++}`);
      const job = {
        plan: {
          scratch: plan.scratch,
          dispatches: plan.dispatches.map((d) => ({ ...d, uniforms: Array.from(d.uniforms) })),
        },
        inputs: inputIds,
        inputWords: inputs.map((w) => (w ? w.length : 0)),
        outputWords,
        outputIds,
        reps,
      };
      try {
        const { seconds } = (await page.evaluate(([j]) => (window as any).hcspRun(j), [job])) as {
          seconds: number[];
        };
        const outputs = outputIds.map((id, i) => {
          const b = blobs.get(id);
          if (!b || b.byteLength !== outputWords[i] * 4) {
            throw new Error(`runPlan: output ${i} came back with ${b?.byteLength ?? 0} bytes, expected ${outputWords[i] * 4}`);
          }
          const copy = new Uint32Array(outputWords[i]);
          new Uint8Array(copy.buffer).set(b);
          return copy;
        });
        return { outputs, seconds };
      } finally {
        for (const id of [...inputIds, ...outputIds]) if (id) blobs.delete(id);
      }
    },
    async close() {
      await browser.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
