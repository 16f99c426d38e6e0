/// <reference types="@webgpu/types" />
import type { KernelPlanner } from '@hcsp/kernels-wgsl';
import { describeAdapter, requestLargeDevice } from './adapterDevice.ts';
import { jobPath, type PageApi, type PageJob } from './pageProtocol.ts';
import { tensorFromWordBytes, tensorWordBytes } from './tensorBytes.ts';
import { WebGpuExecutor } from './webgpuExecutor.ts';

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

/** Installs window.hcspInit / window.hcspRun: the browser end of chromiumHost.ts. */
export function installPageRunner(kernels: Readonly<Record<string, KernelPlanner>>): void {
  let executor: WebGpuExecutor | null = null;
  const api: PageApi = {
    async hcspInit() {
      if (!navigator.gpu) throw new Error('navigator.gpu is undefined on this page');
      const adapter = await navigator.gpu.requestAdapter();
      if (!adapter) throw new Error('navigator.gpu.requestAdapter() returned null');
      const name = describeAdapter(adapter);
      executor = new WebGpuExecutor(await requestLargeDevice(adapter, 'hcsp chromium'), kernels, `chromium: ${name}`);
      return name;
    },
    async hcspRun(job, reportProgress) {
      if (!executor) throw new Error('hcspRun before hcspInit');
      const { graph, keep } = (await (await fetchOk(jobPath(job, 'graph'))).json()) as PageJob;
      const result = await executor.run(
        graph,
        async (decl) => tensorFromWordBytes(decl.dtype, decl.shape, new Uint8Array(await (await fetchOk(jobPath(job, 'tensor', decl.id))).arrayBuffer())),
        { keep, onNode: reportProgress ? (done, total) => void window.hcspProgress?.(done, total) : undefined },
      );
      const posted = [...result.values.keys()];
      for (const [id, t] of result.values) {
        // tensors never live in a SharedArrayBuffer, so the view is a valid fetch body
        await fetchOk(jobPath(job, 'result', id), { method: 'POST', body: tensorWordBytes(t) as Uint8Array<ArrayBuffer> });
      }
      return { stats: result.stats, posted };
    },
  };
  Object.assign(window, api);
}
