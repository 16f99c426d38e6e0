/// <reference types="@webgpu/types" />
import { BackendUnavailableError } from '@hcsp/core';
import { WEBGPU_PRECISION, webGpuBackendOnDevice, type WebGpuBackend } from './backendOnDevice.ts';
import { ChromiumHost, type ChromiumHostOptions } from './chromiumHost.ts';
import { requestNodeDevice } from './nodeDevice.ts';

export { WEBGPU_PRECISION, webGpuBackendOnDevice, type WebGpuBackend } from './backendOnDevice.ts';

export type WebGpuHostChoice = 'auto' | 'dawn' | 'chromium';

export interface WebGpuBackendOptions {
  /** 'auto': dawn.node on a hardware adapter, else headless Chromium (default: HCSP_WEBGPU_HOST, else 'auto') */
  prefer?: WebGpuHostChoice;
  chromium?: ChromiumHostOptions;
}

/**
 * The WebGPU Backend. Never falls back to the CPU: when no host works the error (a
 * BackendUnavailableError) names what was tried and why each failed.
 */
export async function createWebGpuBackend(options: WebGpuBackendOptions = {}): Promise<WebGpuBackend> {
  // HCSP_WEBGPU_HOST picks the device host for callers that do not (the CLI, the test suites)
  const prefer = options.prefer ?? ((process.env.HCSP_WEBGPU_HOST || 'auto') as WebGpuHostChoice);
  if (!['auto', 'dawn', 'chromium'].includes(prefer))
    throw new Error(`webgpu backend: unknown host choice '${prefer}' (auto, dawn, chromium; HCSP_WEBGPU_HOST)`);
  const tried: string[] = [];
  if (prefer === 'auto' || prefer === 'dawn') {
    try {
      const { device, adapter } = await requestNodeDevice();
      // loaded here, not at the top: on the Chromium host the kernels run in the page's bundle
      const { WGSL_KERNELS } = await import('@hcsp/kernels-wgsl');
      return webGpuBackendOnDevice(device, `dawn.node: ${adapter}`, WGSL_KERNELS, { host: 'dawn.node', adapter });
    } catch (e) {
      tried.push(`dawn.node: ${(e as Error).message}`);
      if (prefer === 'dawn') throw new BackendUnavailableError('webgpu', `webgpu backend: no device. Tried ${tried.join('; ')}`);
    }
  }
  try {
    return chromiumBackend(await ChromiumHost.launch(options.chromium));
  } catch (e) {
    tried.push(`headless Chromium: ${(e as Error).message}`);
    throw new BackendUnavailableError('webgpu', `webgpu backend: no device. Tried ${tried.join('; ')}`);
  }
}

function chromiumBackend(host: ChromiumHost): WebGpuBackend {
  return {
    name: 'webgpu',
    precision: WEBGPU_PRECISION,
    host: 'chromium',
    adapter: host.adapter,
    describe: () => `webgpu on headless Chromium (${host.adapter})`,
    prepare: (graph, weights) => host.prepare(graph, weights),
    dispose: () => host.close(),
  };
}
