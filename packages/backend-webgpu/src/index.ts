export { createWebGpuBackend, WEBGPU_PRECISION, type WebGpuBackend, type WebGpuBackendOptions, type WebGpuHostChoice } from './webgpuBackend.ts';
export { WebGpuExecutor, type ExecutorRunOptions, type HostTensorLoader } from './webgpuExecutor.ts';
export { CHROMIUM_EXECUTABLE, CHROMIUM_WEBGPU_ARGS } from '@hcsp/kernels-wgsl/chromium';
export { ChromiumHost, ChromiumHostError, type ChromiumHostOptions, type ChromiumRunOptions, type ChromiumHostFailure } from './chromiumHost.ts';
export { requestNodeDevice, NodeDeviceError, type NodeDevice, type NodeDeviceFailure } from './nodeDevice.ts';
export { WGSL_KERNEL_MODULE, type KernelModule } from './pageBundle.ts';
export { hostTensor } from './hostTensors.ts';
