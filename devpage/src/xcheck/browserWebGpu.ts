/// <reference types="@webgpu/types" />
// The project's WebGPU backend over the page's own device: navigator.gpu's adapter, the same
// large-limits device request the Chromium host makes (adapterDevice.ts), and the backend's
// browser-safe entry (`@hcsp/backend-webgpu/on-device`, without the Node hosts).
import type { Backend } from '@hcsp/core';
import { WGSL_KERNELS } from '@hcsp/kernels-wgsl';
import { webGpuBackendOnDevice } from '@hcsp/backend-webgpu/on-device';
import { describeAdapter, requestLargeDevice } from '../../../packages/backend-webgpu/src/adapterDevice.ts';

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
  const backend: Backend = webGpuBackendOnDevice(device, `browser: ${name}`, WGSL_KERNELS, { host: 'browser', adapter: name });
  return { backend, adapter: name };
}
