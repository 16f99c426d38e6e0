/// <reference types="@webgpu/types" />
import { describeAdapter, isSoftwareAdapter, requestLargeDevice } from './adapterDevice.ts';
import { probeDawnAdapter } from './dawnProbe.ts';

/** Why dawn.node gave no usable device. */
export type NodeDeviceFailure = 'module-load-failed' | 'no-adapter' | 'software-adapter' | 'device-request-failed';

export class NodeDeviceError extends Error {
  constructor(
    readonly reason: NodeDeviceFailure,
    message: string,
  ) {
    super(message);
    this.name = 'NodeDeviceError';
  }
}

export interface NodeDevice {
  device: GPUDevice;
  adapter: string;
}

// dawn.node drops a device whose GPU object was garbage-collected: keep them alive.
const liveGpus: GPU[] = [];

/**
 * A GPUDevice from dawn.node (the `webgpu` package), only on a hardware adapter. Software
 * adapters are refused (reason 'software-adapter'): dawn.node on SwiftShader crashes the
 * process on buffers of ~1 MiB and more (architecture.md; see dawnSwiftShaderCrash.test.ts),
 * so on a GPU-less machine the Chromium host is the device host.
 */
export async function requestNodeDevice(): Promise<NodeDevice> {
  const probe = await probeDawnAdapter();
  if (probe.kind === 'failed') throw new NodeDeviceError('module-load-failed', probe.message);
  if (probe.kind === 'no-adapter') {
    throw new NodeDeviceError('no-adapter', 'dawn.node found no WebGPU adapter (no Vulkan driver Dawn accepts; Debian lavapipe is rejected)');
  }
  if (probe.software) {
    throw new NodeDeviceError(
      'software-adapter',
      `dawn.node's only adapter is a software one (${probe.description}); refused because dawn.node crashes on SwiftShader with buffers of ~1 MiB and more`,
    );
  }
  let gpu: GPU;
  try {
    const { create } = await import('webgpu');
    gpu = create([]);
  } catch (e) {
    throw new NodeDeviceError('module-load-failed', `dawn.node (npm 'webgpu') could not be loaded: ${(e as Error).message}`);
  }
  liveGpus.push(gpu);
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    throw new NodeDeviceError('no-adapter', 'dawn.node found no WebGPU adapter (no Vulkan driver Dawn accepts; Debian lavapipe is rejected)');
  }
  const name = describeAdapter(adapter);
  if (isSoftwareAdapter(adapter)) {
    throw new NodeDeviceError(
      'software-adapter',
      `dawn.node's only adapter is a software one (${name}); refused because dawn.node crashes on SwiftShader with buffers of ~1 MiB and more`,
    );
  }
  try {
    return { device: await requestLargeDevice(adapter, 'hcsp dawn.node'), adapter: name };
  } catch (e) {
    throw new NodeDeviceError('device-request-failed', `dawn.node adapter ${name} refused a device: ${(e as Error).message}`);
  }
}
