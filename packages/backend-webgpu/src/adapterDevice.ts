/// <reference types="@webgpu/types" />

// Shared by both device hosts (dawn.node and the Chromium page): the same limits on both, so
// a graph that runs on one runs on the other.

/** "vendor architecture device (description)", for errors and Backend.describe(). */
export function describeAdapter(adapter: GPUAdapter): string {
  const i = adapter.info;
  const parts = [i.vendor, i.architecture, i.device].filter((s) => s);
  const text = parts.join(' ') || 'unknown adapter';
  return i.description ? `${text} (${i.description})` : text;
}

/** Software adapters (SwiftShader, any fallback/CPU adapter). */
export function isSoftwareAdapter(adapter: GPUAdapter): boolean {
  const i = adapter.info;
  const text = `${i.vendor} ${i.architecture} ${i.device} ${i.description}`.toLowerCase();
  return i.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software|\bcpu\b/.test(text);
}

/**
 * A device with the adapter's largest buffer and binding limits: full HC shapes need
 * storage bindings well over the 128 MiB default (e.g. a [10240, 10240] bf16 weight is 200 MiB).
 */
export async function requestLargeDevice(adapter: GPUAdapter, label: string): Promise<GPUDevice> {
  const l = adapter.limits;
  return adapter.requestDevice({
    label,
    requiredLimits: {
      maxBufferSize: l.maxBufferSize,
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
      maxComputeWorkgroupSizeY: l.maxComputeWorkgroupSizeY,
    },
  });
}
