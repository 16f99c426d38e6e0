import { validateFeeds, type Backend, type BackendPrecision, type Graph, type RunOptions, type RunResult, type Tensor, type ValueId, type WeightSource } from '@hcsp/core';
import { ChromiumHost, type ChromiumHostOptions } from './chromiumHost.ts';
import { hostTensor } from './hostTensors.ts';
import { requestNodeDevice } from './nodeDevice.ts';
import { WebGpuExecutor } from './webgpuExecutor.ts';

export type WebGpuHostChoice = 'auto' | 'dawn' | 'chromium';

export interface WebGpuBackendOptions {
  /** 'auto': dawn.node on a hardware adapter, else headless Chromium (default) */
  prefer?: WebGpuHostChoice;
  chromium?: ChromiumHostOptions;
}

export interface WebGpuBackend extends Backend {
  readonly host: 'dawn.node' | 'chromium';
  readonly adapter: string;
  /** which host and adapter run the graphs, e.g. "webgpu on chromium (google swiftshader ...)" */
  describe(): string;
}

export const WEBGPU_PRECISION: BackendPrecision = {
  reorderedMaxUlp: 0,
  note:
    'every WGSL kernel accumulates in fp32 in the CPU reference\'s order, with plain a*b + c (no dot()/fma(), which SwiftShader can lower to FMAs) and the ' +
    'shared fp32 math library; collectives use the reference summation orders. Bit-exact, checked op by op in test/. Known exception: subnormal fp32 ' +
    'intermediates are flushed to zero by GPUs (SwiftShader included) and not by the CPU reference outside fp32Math.',
};

/**
 * The WebGPU Backend. Never falls back to the CPU: when no host works the error names what
 * was tried and why each failed.
 */
export async function createWebGpuBackend(options: WebGpuBackendOptions = {}): Promise<WebGpuBackend> {
  const prefer = options.prefer ?? 'auto';
  if (!['auto', 'dawn', 'chromium'].includes(prefer)) throw new Error(`webgpu backend: unknown host choice '${prefer}' (auto, dawn, chromium)`);
  const tried: string[] = [];
  if (prefer === 'auto' || prefer === 'dawn') {
    try {
      return await dawnBackend(await requestNodeDevice());
    } catch (e) {
      tried.push(`dawn.node: ${(e as Error).message}`);
      if (prefer === 'dawn') throw new Error(`webgpu backend: no device. Tried ${tried.join('; ')}`);
    }
  }
  try {
    return chromiumBackend(await ChromiumHost.launch(options.chromium));
  } catch (e) {
    tried.push(`headless Chromium: ${(e as Error).message}`);
    throw new Error(`webgpu backend: no device. Tried ${tried.join('; ')}`);
  }
}

async function dawnBackend({ device, adapter }: { device: GPUDevice; adapter: string }): Promise<WebGpuBackend> {
  // loaded here, not at the top: on the Chromium host the kernels run in the page's bundle
  const { WGSL_KERNELS } = await import('@hcsp/kernels-wgsl');
  const executor = new WebGpuExecutor(device, WGSL_KERNELS, `dawn.node: ${adapter}`);
  return {
    name: 'webgpu',
    precision: WEBGPU_PRECISION,
    host: 'dawn.node',
    adapter,
    describe: () => `webgpu on dawn.node (${adapter})`,
    run: async (graph: Graph, feeds: Map<ValueId, Tensor>, weights: WeightSource, runOptions?: RunOptions): Promise<RunResult> => {
      validateFeeds(graph, feeds);
      return executor.run(graph, async (decl) => hostTensor(graph, feeds, weights, decl.id), runOptions);
    },
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
    run: async (graph, feeds, weights, runOptions) => {
      validateFeeds(graph, feeds);
      return host.run(graph, feeds, weights, runOptions);
    },
    dispose: () => host.close(),
  };
}
