/// <reference types="@webgpu/types" />
import { GraphSession, type KernelTable, type Tensor, type ValueDecl, type ValueId } from '@hcsp/core';
import type { KernelPlanner } from '@hcsp/kernels-wgsl';
import { describeAdapter, requestLargeDevice } from './adapterDevice.ts';
import { jobPath, type PageApi, type PageJob } from './pageProtocol.ts';
import { tensorFromWordBytes, tensorWordBytes } from './tensorBytes.ts';
import { WebGpuDevice } from './webgpuDevice.ts';

declare global {
  interface Window {
    /** set by the host with page.exposeFunction when it wants progress */
    hcspProgress?: (done: number, total: number) => Promise<void>;
  }
}

async function fetchOk(url: string, init?: RequestInit): Promise<Response> {
  const res = await fetch(url, init);
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

/**
 * An input or weight; with `rows`, only those row ranges of a row-gathered weight, asked for
 * in a POST body (a prefill's n-gram rows are thousands of ranges: no URL holds them).
 */
async function fetchTensor(job: string, decl: ValueDecl, rows?: [number, number][]): Promise<Tensor> {
  const url = jobPath(job, 'tensor', decl.id);
  const shape = rows ? [rows.reduce((n, [a, b]) => n + b - a, 0), ...decl.shape.slice(1)] : decl.shape;
  const res = rows ? await fetchOk(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(rows) }) : await fetchOk(url);
  return tensorFromWordBytes(decl.dtype, shape, new Uint8Array(await res.arrayBuffer()));
}

/**
 * POSTs raw word bytes as a Blob body. Measured here (headless Chromium 21 MB, load 6-8): an
 * ArrayBuffer body took 7-14 s in the page (plus seconds of a stalled renderer after it), a
 * Blob body of the same bytes 0.3-1.6 s; Node received either in under 0.7 s.
 */
async function postBytes(job: string, id: ValueId, bytes: Uint8Array): Promise<void> {
  // tensors and plan outputs never live in a SharedArrayBuffer, so the view is a valid Blob part
  await fetchOk(jobPath(job, 'result', id), { method: 'POST', body: new Blob([bytes as Uint8Array<ArrayBuffer>]) });
}

/** Installs the PageApi on window: the browser end of chromiumHost.ts. */
export function installPageRunner(kernels: KernelTable<KernelPlanner>): void {
  let device: WebGpuDevice | null = null;
  const sessions = new Map<string, GraphSession<GPUBuffer>>();
  const session = (job: string): GraphSession<GPUBuffer> => {
    const s = sessions.get(job);
    if (!s) throw new Error(`page: job ${job} is not prepared`);
    return s;
  };
  const api: PageApi = {
    async hcspInit() {
      if (!navigator.gpu) throw new Error('navigator.gpu is undefined on this page');
      const adapter = await navigator.gpu.requestAdapter();
      if (!adapter) throw new Error('navigator.gpu.requestAdapter() returned null');
      const name = describeAdapter(adapter);
      device = new WebGpuDevice(await requestLargeDevice(adapter, 'hcsp chromium'), kernels, `chromium: ${name}`);
      return name;
    },
    async hcspPrepare(job) {
      if (!device) throw new Error('hcspPrepare before hcspInit');
      const { graph } = (await (await fetchOk(jobPath(job, 'graph'))).json()) as PageJob;
      sessions.set(job, await GraphSession.open(graph, device, (decl, rows) => fetchTensor(job, decl, rows), { backend: 'webgpu' }));
    },
    async hcspRun(job, options) {
      const s = session(job);
      const feeds = new Map<ValueId, Tensor>();
      for (const id of s.graph.inputs) feeds.set(id, await fetchTensor(job, s.graph.values[id]));
      const t0 = performance.now();
      const result = await s.run(feeds, {
        keep: options.keep,
        keepOnDevice: options.keepOnDevice,
        onNode: options.reportProgress ? (done, total) => void window.hcspProgress?.(done, total) : undefined,
      });
      const t1 = performance.now();
      let bytes = 0;
      for (const [id, t] of result.values) {
        const b = tensorWordBytes(t);
        bytes += b.byteLength;
        await postBytes(job, id, b);
      }
      const pageSeconds = { run: (t1 - t0) / 1000, post: (performance.now() - t1) / 1000, postedBytes: bytes };
      return { stats: result.stats, posted: [...result.values.keys()], pageSeconds };
    },
    async hcspRead(job, id) {
      await postBytes(job, id, tensorWordBytes(await session(job).read(id)));
    },
    async hcspRunPlan(job, wire, present, outputWords, reps) {
      if (!device) throw new Error('hcspRunPlan before hcspInit');
      const inputs: (Uint32Array | null)[] = [];
      for (const [i, p] of present.entries()) {
        inputs.push(p ? new Uint32Array(await (await fetchOk(jobPath(job, 'tensor', String(i)))).arrayBuffer()) : null);
      }
      const plan = { scratch: wire.scratch, dispatches: wire.dispatches.map((d) => ({ ...d, uniforms: Uint32Array.from(d.uniforms) })) };
      const { outputs, seconds } = await device.runPlan(plan, inputs, [...outputWords], reps);
      for (const [i, w] of outputs.entries()) await postBytes(job, String(i), new Uint8Array(w.buffer, w.byteOffset, w.byteLength));
      return seconds;
    },
    async hcspCompileErrors(wgsl) {
      if (!device) throw new Error('hcspCompileErrors before hcspInit');
      return device.compileErrors(wgsl);
    },
    async hcspDispose(job) {
      await sessions.get(job)?.dispose();
      sessions.delete(job);
    },
  };
  Object.assign(window, api);
}
