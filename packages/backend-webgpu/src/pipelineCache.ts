/// <reference types="@webgpu/types" />
import type { DeviceLostGuard } from './deviceLostGuard.ts';

// Compute pipelines cached by the kernel's key (equal keys mean equal WGSL text, as
// TF.js's shader keys). Compile errors come back from getCompilationInfo() inside a
// validation scope and are thrown with the key, never left as warnings in a log.
export class PipelineCache {
  private readonly pipelines = new Map<string, Promise<GPUComputePipeline>>();

  constructor(
    private readonly device: GPUDevice,
    private readonly guard: DeviceLostGuard,
  ) {}

  get(key: string, wgsl: string): Promise<GPUComputePipeline> {
    let p = this.pipelines.get(key);
    if (!p) {
      p = this.compile(key, wgsl);
      this.pipelines.set(key, p);
      // a failed compile is not cached: the next run reports it again
      p.catch(() => this.pipelines.delete(key));
    }
    return p;
  }

  private async compile(key: string, wgsl: string): Promise<GPUComputePipeline> {
    this.device.pushErrorScope('validation');
    let module: GPUShaderModule;
    let pipeline: GPUComputePipeline | null = null;
    let messages: string[] = [];
    try {
      module = this.device.createShaderModule({ label: key, code: wgsl });
      const info = await this.guard.race(module.getCompilationInfo());
      messages = info.messages.filter((m) => m.type === 'error').map((m) => `${m.lineNum}:${m.linePos}: ${m.message}`);
      // entryPoint omitted: a kernel module has exactly one compute entry point.
      if (messages.length === 0) pipeline = this.device.createComputePipeline({ label: key, layout: 'auto', compute: { module } });
    } finally {
      const err = await this.guard.race(this.device.popErrorScope());
      if (err && messages.length === 0) messages.push(err.message);
    }
    if (messages.length > 0 || !pipeline) {
      throw new Error(`webgpu (${this.guard.host}): kernel '${key}' failed to compile:\n${messages.join('\n')}`);
    }
    return pipeline;
  }
}
