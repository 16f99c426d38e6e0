import { beforeEach, describe, expect, it } from 'vitest';
import { GPU_SELECTION_ENV, useFakeGpuBackends } from '../../../test/support/fakeGpuLibraries.ts';
import { selectGpu } from './gpuSelection.ts';
import { createRocmBackend, type RocmBackend } from './rocmBackend.ts';

// Which GPU a rank opens (issue 20, item 9): the local rank indexes the devices the process
// can see; a scheduler that masks each rank to one GPU leaves device 0; HCSP_GPU_INDEX
// overrides; a rank whose device does not exist is one error naming the mask. The rules on
// their own, then through createRocmBackend over the fake libamdhip64 / libcuda, whose
// FAKE_GPU_COUNT stands for the devices a mask leaves visible (the real runtimes apply the mask
// themselves and number what is left from 0).

const NO_MASK = 'no ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES set';

describe('selectGpu: the rules', () => {
  it('the local rank indexes the visible devices; none set is device 0', () => {
    expect(selectGpu('hip', 8, {}).index).toBe(0);
    expect(selectGpu('hip', 8, { LOCAL_RANK: '5' })).toEqual({ index: 5, reason: 'LOCAL_RANK=5', masks: '' });
    expect(selectGpu('hip', 4, { OMPI_COMM_WORLD_LOCAL_RANK: '3' }).index).toBe(3);
    // torchrun's variable before mpirun's
    expect(selectGpu('cuda', 4, { LOCAL_RANK: '1', OMPI_COMM_WORLD_LOCAL_RANK: '2' }).index).toBe(1);
    // a mask leaving several devices: the local rank still indexes them
    expect(selectGpu('hip', 2, { LOCAL_RANK: '1', HIP_VISIBLE_DEVICES: '4,5' })).toEqual({
      index: 1,
      reason: 'LOCAL_RANK=1',
      masks: 'HIP_VISIBLE_DEVICES=4,5',
    });
  });

  it('a rank masked to its own GPU uses device 0, whatever its local rank', () => {
    expect(selectGpu('hip', 1, { LOCAL_RANK: '3', HIP_VISIBLE_DEVICES: '3' })).toEqual({
      index: 0,
      reason: 'LOCAL_RANK=3, the one GPU visible through HIP_VISIBLE_DEVICES=3',
      masks: 'HIP_VISIBLE_DEVICES=3',
    });
    expect(selectGpu('hip', 1, { LOCAL_RANK: '6', ROCR_VISIBLE_DEVICES: '6' }).index).toBe(0);
    expect(selectGpu('hip', 1, { LOCAL_RANK: '2', CUDA_VISIBLE_DEVICES: '2' }).index).toBe(0);
    expect(selectGpu('cuda', 1, { OMPI_COMM_WORLD_LOCAL_RANK: '7', CUDA_VISIBLE_DEVICES: 'GPU-8c6f3d2e' }).index).toBe(0);
  });

  it('a local rank past the visible devices is one error naming it, the masks and the count', () => {
    expect(() => selectGpu('hip', 2, { LOCAL_RANK: '3' })).toThrow(
      `rocm backend, device hip: LOCAL_RANK=3 names GPU 3, but this process sees 2 GPUs (${NO_MASK}). ` +
        'Start fewer ranks per node, mask each rank to its own GPU (e.g. HIP_VISIBLE_DEVICES=<its GPU>), or set HCSP_GPU_INDEX',
    );
    // a mask leaving two devices for local rank 3 is not a per-rank mask
    expect(() => selectGpu('hip', 2, { LOCAL_RANK: '3', HIP_VISIBLE_DEVICES: '2,3' })).toThrow(
      'rocm backend, device hip: LOCAL_RANK=3 names GPU 3, but this process sees 2 GPUs (HIP_VISIBLE_DEVICES=2,3)',
    );
    // HIP's masks do not mask CUDA
    expect(() => selectGpu('cuda', 1, { OMPI_COMM_WORLD_LOCAL_RANK: '1', HIP_VISIBLE_DEVICES: '1' })).toThrow(
      'rocm backend, device cuda: OMPI_COMM_WORLD_LOCAL_RANK=1 names GPU 1, but this process sees 1 GPU (no CUDA_VISIBLE_DEVICES set)',
    );
  });

  it('HCSP_GPU_INDEX overrides the local rank and the mask rule, checked against the visible count', () => {
    expect(selectGpu('hip', 4, { HCSP_GPU_INDEX: '2', LOCAL_RANK: '0' })).toEqual({ index: 2, reason: 'HCSP_GPU_INDEX=2', masks: '' });
    expect(() => selectGpu('hip', 1, { HCSP_GPU_INDEX: '1', LOCAL_RANK: '1', HIP_VISIBLE_DEVICES: '1' })).toThrow(
      'rocm backend, device hip: HCSP_GPU_INDEX=1 names GPU 1, but this process sees 1 GPU (HIP_VISIBLE_DEVICES=1); the index counts visible GPUs from 0',
    );
  });

  it('a value that is not an index is refused naming the variable', () => {
    expect(() => selectGpu('hip', 4, { LOCAL_RANK: 'one' })).toThrow("rocm backend: LOCAL_RANK='one' is not a GPU index (a non-negative integer)");
    expect(() => selectGpu('hip', 4, { HCSP_GPU_INDEX: '-1' })).toThrow("rocm backend: HCSP_GPU_INDEX='-1' is not a GPU index (a non-negative integer)");
    expect(() => selectGpu('cuda', 4, { OMPI_COMM_WORLD_LOCAL_RANK: '01' })).toThrow("rocm backend: OMPI_COMM_WORLD_LOCAL_RANK='01' is not a GPU index");
  });
});

const { fake, open } = useFakeGpuBackends<RocmBackend>('hcsp-gpusel-', [
  'HCSP_HIP_LIB',
  'HCSP_CUDA_LIB',
  'FAKE_GPU_LOG',
  'FAKE_GPU_COUNT',
  ...GPU_SELECTION_ENV,
]);

async function backend(device: 'hip' | 'cuda' | 'auto'): Promise<RocmBackend> {
  const b = await createRocmBackend({ device, codeObjects: codeObjects() });
  open.push(b);
  return b;
}
/** a code-object folder for both fakes (each device loads its arch's) */
function codeObjects(): string {
  fake.codeObjects('objects', 'sm_90', { 'basic.cubin': ['hcsp_add_bf16'] });
  return fake.codeObjects('objects', 'gfx942', { 'basic.hsaco': ['hcsp_add_bf16'] });
}

describe('the GPU a rocm backend opens (fake runtimes)', () => {
  beforeEach(() => {
    process.env.HCSP_HIP_LIB = fake.lib('fakehip.so');
    process.env.HCSP_CUDA_LIB = fake.lib('fakecuda.so');
  });

  it('HIP_VISIBLE_DEVICES=3 and LOCAL_RANK=3: the one visible device, device 0', async () => {
    Object.assign(process.env, { HIP_VISIBLE_DEVICES: '3', LOCAL_RANK: '3', FAKE_GPU_COUNT: '1' });
    const b = await backend('hip');
    expect(fake.logText()).toMatch(/^hipSetDevice 0$/m);
    expect(fake.logText()).not.toMatch(/hipSetDevice [1-9]/);
    expect(b.describe()).toMatch(/^rocm on the hip device 0 \(LOCAL_RANK=3, the one GPU visible through HIP_VISIBLE_DEVICES=3\): Fake Instinct MI308X/);
  });

  it('CUDA_VISIBLE_DEVICES=5 and LOCAL_RANK=5 on the cuda device: ordinal 0', async () => {
    Object.assign(process.env, { CUDA_VISIBLE_DEVICES: '5', LOCAL_RANK: '5', FAKE_GPU_COUNT: '1' });
    const b = await backend('cuda');
    expect(fake.logText()).toMatch(/^cuDevicePrimaryCtxRetain 0$/m);
    expect(b.describe()).toMatch(/^rocm on the cuda device 0 \(LOCAL_RANK=5, the one GPU visible through CUDA_VISIBLE_DEVICES=5\): Fake H200/);
  });

  it('LOCAL_RANK beyond the visible devices without a mask: one error naming LOCAL_RANK and the count, nothing opened', async () => {
    Object.assign(process.env, { LOCAL_RANK: '3', FAKE_GPU_COUNT: '2' });
    const e = await backend('hip').catch((x: unknown) => x);
    expect((e as Error).message).toBe(
      `rocm backend, device hip: LOCAL_RANK=3 names GPU 3, but this process sees 2 GPUs (${NO_MASK}). ` +
        'Start fewer ranks per node, mask each rank to its own GPU (e.g. HIP_VISIBLE_DEVICES=<its GPU>), or set HCSP_GPU_INDEX',
    );
    expect(fake.logText()).not.toMatch(/hipSetDevice|hipStreamCreate/);
  });

  it('under --device auto a misconfigured rank is the same error, not a run on the host', async () => {
    Object.assign(process.env, { LOCAL_RANK: '3', FAKE_GPU_COUNT: '2' });
    const e = await backend('auto').catch((x: unknown) => x);
    expect((e as Error).message).toMatch(/^rocm backend, device hip: LOCAL_RANK=3 names GPU 3, but this process sees 2 GPUs/);
  });

  it('HCSP_GPU_INDEX overrides LOCAL_RANK', async () => {
    Object.assign(process.env, { HCSP_GPU_INDEX: '1', LOCAL_RANK: '0', FAKE_GPU_COUNT: '2' });
    const b = await backend('hip');
    expect(fake.logText()).toMatch(/^hipSetDevice 1$/m);
    expect(b.describe()).toMatch(/^rocm on the hip device 1 \(HCSP_GPU_INDEX=1\): /);
  });

  it('a mask that leaves no device is named in the error', async () => {
    Object.assign(process.env, { HIP_VISIBLE_DEVICES: '', FAKE_GPU_COUNT: '0' });
    const e = await backend('hip').catch((x: unknown) => x);
    expect((e as Error).message).toBe(`rocm backend, device hip: the HIP runtime ${fake.lib('fakehip.so')} sees no GPU through HIP_VISIBLE_DEVICES=`);
  });
});
