export {
  createWebGpuBackend,
  webGpuBackendOnDevice,
  WEBGPU_PRECISION,
  type WebGpuBackend,
  type WebGpuBackendOptions,
  type WebGpuHostChoice,
} from './webgpuBackend.ts';
export { WebGpuDevice } from './webgpuDevice.ts';
export { chromiumExecutable, CHROMIUM_WEBGPU_ARGS } from './chromiumFlags.ts';
export {
  ChromiumHost,
  ChromiumHostError,
  type ChromiumHostOptions,
  type ChromiumRunOptions,
  type ChromiumRunSeconds,
  type ChromiumHostFailure,
} from './chromiumHost.ts';
export { requestNodeDevice, NodeDeviceError, type NodeDevice, type NodeDeviceFailure } from './nodeDevice.ts';
export { WGSL_KERNEL_MODULE, type KernelModule } from './pageBundle.ts';
export { hostTensor } from './hostTensors.ts';
