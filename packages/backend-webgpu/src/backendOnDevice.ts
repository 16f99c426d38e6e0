/// <reference types="@webgpu/types" />
// The WebGPU backend over a GPUDevice already held, with nothing of the Node hosts (dawn.node,
// headless Chromium with node:http and playwright-core): what a browser page imports
// (`@hcsp/backend-webgpu/on-device`).
import {
  exactPrecision,
  GraphSession,
  refuseTorchCpuTies,
  resolveWeightRows,
  type Backend,
  type BackendPrecision,
  type Graph,
  type KernelTable,
  type PreparedGraph,
  type WeightSource,
} from '@hcsp/core';
import type { KernelPlanner } from '@hcsp/kernels-wgsl';
import { WebGpuDevice } from './webgpuDevice.ts';

export interface WebGpuBackend extends Backend {
  readonly host: 'dawn.node' | 'chromium' | 'browser';
  readonly adapter: string;
  /** which host and adapter run the graphs, e.g. "webgpu on chromium (google swiftshader ...)" */
  describe(): string;
}

export const WEBGPU_PRECISION: BackendPrecision = exactPrecision(
  "every WGSL kernel accumulates in fp32 in the CPU reference's order, with plain a*b + c (no dot()/fma(), which SwiftShader can lower to FMAs) and the " +
    'shared fp32 math library; collectives use the reference summation orders. Bit-exact, checked op by op in test/. Known exception: subnormal fp32 ' +
    'intermediates are flushed to zero by GPUs (SwiftShader included) and not by the CPU reference outside fp32Math.',
);

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
    describe: () => `webgpu on ${where.host === 'browser' ? 'this browser' : where.host} (${where.adapter})`,
    prepare: async (graph: Graph, weights: WeightSource): Promise<PreparedGraph> => {
      refuseTorchCpuTies(graph, 'webgpu');
      return GraphSession.open(graph, gpu, (decl, rows) => resolveWeightRows(weights, decl.weight!, rows), { backend: 'webgpu' });
    },
    dispose: async () => device.destroy(),
  };
}
