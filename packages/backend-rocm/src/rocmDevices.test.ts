import { describe, expect, it } from 'vitest';
import { createRocmBackend } from './rocmBackend.ts';
import { DEVICE_GEMMS, deviceHelp, GEMM_MODES, GPU_KINDS, gpuRuntimeKind, KERNEL_MODES, ROCM_DEVICE_KINDS, ROCM_DEVICES } from './rocmDevices.ts';

// The device table is the one list of the rocm backend's devices: the backend list's options
// (packages/backends/src/registry.test.ts), the backend's checks and its GPU selection read it.

describe('rocm device table', () => {
  it('derives the option lists, each default first', () => {
    expect(ROCM_DEVICES).toEqual(['host', 'emulated', 'hip', 'cuda', 'auto']);
    expect(GEMM_MODES).toEqual(['exact', 'blas', 'vendor', 'vendor-invariant']);
    expect(KERNEL_MODES).toEqual(['fast', 'exact']);
    expect(GPU_KINDS).toEqual(['hip', 'cuda']);
    expect(DEVICE_GEMMS).toEqual({
      host: ['exact', 'blas'],
      emulated: ['exact'],
      hip: ['vendor', 'vendor-invariant', 'exact'],
      cuda: ['vendor', 'vendor-invariant', 'exact'],
    });
  });

  it("words --device's help from the rows", () => {
    expect(deviceHelp()).toBe(
      'host (C++ on this CPU) | emulated (the GPU kernel sources run on this CPU) | hip | cuda | auto (the first of hip, cuda, host that starts; the report says which)',
    );
  });

  it('gives every vendor runtime its library variable and device masks', () => {
    expect(gpuRuntimeKind('hip')).toMatchObject({ label: 'HIP', libraryVariable: 'HCSP_HIP_LIB', suggestedMask: 'HIP_VISIBLE_DEVICES', blasLt: 'hipBLASLt' });
    expect(gpuRuntimeKind('cuda')).toMatchObject({
      label: 'CUDA',
      libraryVariable: 'HCSP_CUDA_LIB',
      maskVariables: ['CUDA_VISIBLE_DEVICES'],
      blasLt: 'cuBLASLt',
    });
    for (const d of ROCM_DEVICE_KINDS) expect(d.open === 'runtime').toBe('runtime' in d);
  });

  it('refuses a kernels mode the device lacks, naming the devices that have it', async () => {
    await expect(createRocmBackend({ device: 'host', kernels: 'fast' })).rejects.toThrow(
      "rocm backend: the host device has only the reference-order kernels (kernels 'exact'); 'fast' applies to the GPU devices (emulated, hip, cuda)",
    );
  });

  it('names the modes a device has for one it lacks', async () => {
    await expect(createRocmBackend({ device: 'host', gemm: 'vendor' })).rejects.toThrow(
      "rocm backend: the host device has no 'vendor' GEMM (it has: exact, blas)",
    );
  });
});
