/// <reference types="@webgpu/types" />
import type { DeviceLostGuard } from './deviceLostGuard.ts';

// Numeric usage flags (WebGPU spec values) instead of the GPUBufferUsage global, which
// dawn.node does not install on globalThis: the executor runs unchanged in Node and pages.
export const BUFFER_STORAGE = 0x0080;
export const BUFFER_COPY_SRC = 0x0004;
export const BUFFER_COPY_DST = 0x0008;
export const BUFFER_MAP_READ = 0x0001;
export const BUFFER_UNIFORM = 0x0040;

/** Buffer allocation and transfer with out-of-memory and validation errors as thrown Errors. */
export class GpuMemory {
  constructor(
    private readonly device: GPUDevice,
    private readonly guard: DeviceLostGuard,
  ) {}

  /** A buffer named `label` (the value or scratch it holds) of `bytes` bytes. */
  async alloc(label: string, bytes: number, usage: number): Promise<GPUBuffer> {
    const limit = this.device.limits.maxBufferSize;
    if (!(Number.isSafeInteger(bytes) && bytes > 0)) {
      throw new Error(`webgpu (${this.guard.host}): buffer '${label}' has invalid size ${bytes} bytes`);
    }
    if (bytes > limit) {
      throw new Error(`webgpu (${this.guard.host}): buffer '${label}' of ${bytes} bytes exceeds the device's maxBufferSize ${limit}`);
    }
    this.device.pushErrorScope('out-of-memory');
    this.device.pushErrorScope('validation');
    let buffer: GPUBuffer | undefined;
    let thrown: unknown = null;
    try {
      buffer = this.device.createBuffer({ label, size: bytes, usage });
    } catch (e) {
      thrown = e;
    }
    // the scopes are popped whatever createBuffer did; their errors say more than its exception
    const validation = this.guard.race(this.device.popErrorScope());
    const oom = this.guard.race(this.device.popErrorScope());
    const [v, o] = await Promise.all([validation, oom]);
    if (o) throw new Error(`webgpu (${this.guard.host}): out of memory allocating buffer '${label}' of ${bytes} bytes: ${o.message}`);
    if (v) throw new Error(`webgpu (${this.guard.host}): cannot allocate buffer '${label}' of ${bytes} bytes: ${v.message}`);
    if (thrown !== null || buffer === undefined) throw thrown;
    return buffer;
  }

  /** A storage buffer holding `bytes` (length a multiple of 4). */
  async upload(label: string, bytes: Uint8Array, extraUsage = 0): Promise<GPUBuffer> {
    const buffer = await this.alloc(label, bytes.byteLength, BUFFER_STORAGE | BUFFER_COPY_SRC | BUFFER_COPY_DST | extraUsage);
    this.device.queue.writeBuffer(buffer, 0, bytes.buffer, bytes.byteOffset, bytes.byteLength);
    return buffer;
  }

  /** The first `bytes` bytes of a buffer (multiple of 4), through a mapped staging copy. */
  async read(label: string, src: GPUBuffer, bytes: number): Promise<Uint8Array> {
    const staging = await this.alloc(`${label} (readback)`, bytes, BUFFER_MAP_READ | BUFFER_COPY_DST);
    try {
      const encoder = this.device.createCommandEncoder({ label: `read ${label}` });
      encoder.copyBufferToBuffer(src, 0, staging, 0, bytes);
      this.device.queue.submit([encoder.finish()]);
      await this.guard.race(staging.mapAsync(0x0001 /* GPUMapMode.READ */));
      const out = new Uint8Array(bytes);
      out.set(new Uint8Array(staging.getMappedRange(0, bytes)));
      staging.unmap();
      return out;
    } finally {
      staging.destroy();
    }
  }
}
