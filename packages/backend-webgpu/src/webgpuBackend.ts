/// <reference types="@webgpu/types" />
import {
  BackendUnavailableError,
  exactPrecision,
  GraphSession,
  resolveWeightRows,
  type Backend,
  type BackendPrecision,
  type Graph,
  type KernelTable,
  type PreparedGraph,
  type WeightSource,
} from '@hcsp/core';
import type { KernelPlanner } from '@hcsp/kernels-wgsl';
import { ChromiumHost, type ChromiumHostOptions } from './chromiumHost.ts';
import { requestNodeDevice } from './nodeDevice.ts';
import { WebGpuDevice } from './webgpuDevice.ts';

export type WebGpuHostChoice = 'auto' | 'dawn' | 'chromium';

export interface WebGpuBackendOptions {
  /** 'auto': dawn.node on a hardware adapter, else headless Chromium (default: HCSP_WEBGPU_HOST, else 'auto') */
  prefer?: WebGpuHostChoice;
  chromium?: ChromiumHostOptions;
}

export interface WebGpuBackend extends Backend {
  readonly host: 'dawn.node' | 'chromium' | 'browser';
  readonly adapter: string;
  /** which host and adapter run the graphs, e.g. "webgpu on chromium (google swiftshader ...)" */
  describe(): string;
}

export const WEBGPU_PRECISION: BackendPrecision = exactPrecision(
  'every WGSL kernel accumulates in fp32 in the CPU reference\'s order, with plain a*b + c (no dot()/fma(), which SwiftShader can lower to FMAs) and the ' +
    'shared fp32 math library; collectives use the reference summation orders. Bit-exact, checked op by op in test/. Known exception: subnormal fp32 ' +
    'intermediates are flushed to zero by GPUs (SwiftShader included) and not by the CPU reference outside fp32Math.',
);

/**
 * The WebGPU Backend. Never falls back to the CPU: when no host works the error (a
 * BackendUnavailableError) names what was tried and why each failed.
 */
export async function createWebGpuBackend(options: WebGpuBackendOptions = {}): Promise<WebGpuBackend> {
  // HCSP_WEBGPU_HOST picks the device host for callers that do not (the CLI, the test suites)
  const prefer = options.prefer ?? ((process.env.HCSP_WEBGPU_HOST || 'auto') as WebGpuHostChoice);
  if (!['auto', 'dawn', 'chromium'].includes(prefer)) throw new Error(`webgpu backend: unknown host choice '${prefer}' (auto, dawn, chromium; HCSP_WEBGPU_HOST)`);
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

/**
 * The backend over a GPUDevice this process already holds (dawn.node, or a browser's
 * navigator.gpu device, as the dev page uses): graphs run in this JS context.
 */
export function webGpuBackendOnDevice(
  device: GPUDevice,
  label: string,
  kernels: KernelTable<KernelPlanner>,
  where: { host: WebGpuBackend['host']; adapter: string },
): WebGpuBackend {
  const gpu = new WebGpuDevice(device, kernels, label);
  return {
    name: 'webgpu',
    precision: WEBGPU_PRECISION,
    ...where,
    describe: () => `webgpu on ${where.host} (${where.adapter})`,
    prepare: (graph: Graph, weights: WeightSource): Promise<PreparedGraph> =>
      GraphSession.open(graph, gpu, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), { backend: 'webgpu' }),
    dispose: async () => device.destroy(),
  };
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
