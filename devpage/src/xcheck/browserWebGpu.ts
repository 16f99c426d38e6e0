/// <reference types="@webgpu/types" />
// The project's WebGPU backend over the page's own device: navigator.gpu's adapter, the same
// large-limits device request the Chromium host makes (adapterDevice.ts), and core's
// GraphSession over a WebGpuDevice with the WGSL kernel table, exactly what
// webGpuBackendOnDevice builds. That function's module also holds the Node hosts (dawn.node,
// the Chromium host with node:http and playwright-core), which a page cannot load, so the
// browser-safe parts are imported from their own files.
import { exactPrecision, GraphSession, resolveWeightRows, type Backend, type Graph, type PreparedGraph, type WeightSource } from '@hcsp/core';
import { WGSL_KERNELS } from '@hcsp/kernels-wgsl';
import { describeAdapter, requestLargeDevice } from '../../../packages/backend-webgpu/src/adapterDevice.ts';
import { WebGpuDevice } from '../../../packages/backend-webgpu/src/webgpuDevice.ts';

export interface BrowserWebGpu {
  backend: Backend;
  /** describeAdapter(): "vendor architecture device (description)" */
  adapter: string;
}

/** Why this page has no WebGPU, in words for the page; null when navigator.gpu exists (an adapter may still be refused). */
export function webGpuMissing(): string | null {
  if (typeof navigator === 'undefined' || !('gpu' in navigator) || !navigator.gpu) {
    const secure = typeof window !== 'undefined' && !window.isSecureContext ? ' (this page is not a secure context: serve it from localhost or https)' : '';
    return `WebGPU is unavailable in this browser: navigator.gpu is undefined${secure}. Chromium on Linux needs --enable-unsafe-webgpu.`;
  }
  return null;
}

/** Requests an adapter and a device and wraps them as a Backend; throws with a message for the page when there is none. */
export async function openBrowserWebGpu(): Promise<BrowserWebGpu> {
  const missing = webGpuMissing();
  if (missing) throw new Error(missing);
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('WebGPU is unavailable: navigator.gpu.requestAdapter() returned no adapter (no GPU or driver this browser accepts).');
  const name = describeAdapter(adapter);
  const device = await requestLargeDevice(adapter, 'hcsp dev page');
  const gpu = new WebGpuDevice(device, WGSL_KERNELS, `browser: ${name}`);
  const backend: Backend = {
    name: 'webgpu',
    precision: exactPrecision('the WebGPU backend (packages/backend-webgpu WEBGPU_PRECISION): the CPU reference\'s order in every kernel, bit-exact but for subnormal fp32 intermediates'),
    describe: () => `webgpu on this browser (${name})`,
    prepare: (graph: Graph, weights: WeightSource): Promise<PreparedGraph> =>
      GraphSession.open(graph, gpu, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), { backend: 'webgpu' }),
    dispose: async () => device.destroy(),
  };
  return { backend, adapter: name };
}
