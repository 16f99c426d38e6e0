/// <reference types="@webgpu/types" />
// Child process of dawnSwiftShaderCrash.test.ts (run with tsx; it may die, which is the
// point): uploads a buffer with dawn.node after keeping the JS thread busy, the pattern that
// crashes dawn.node on SwiftShader (architecture.md), then reads it back and checks it.
// Prints one JSON line per stage to stdout so the parent can tell how far it got.
import { create } from 'webgpu';

const bytes = Number(process.argv[2]);
const busyMs = Number(process.argv[3]);
if (!(Number.isInteger(bytes) && bytes > 0 && bytes % 4 === 0)) throw new Error(`dawnCrashChild: bad byte count '${process.argv[2]}'`);
if (!(busyMs >= 0)) throw new Error(`dawnCrashChild: bad busy time '${process.argv[3]}'`);

const say = (stage: string, extra: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ stage, ...extra })}\n`);
};

const gpu = create([]);
const adapter = await gpu.requestAdapter();
if (!adapter) {
  say('no-adapter');
  process.exit(3);
}
say('adapter', { vendor: adapter.info.vendor, architecture: adapter.info.architecture, description: adapter.info.description });
const device = await adapter.requestDevice();

const data = new Uint32Array(bytes / 4);
for (let i = 0; i < data.length; i++) data[i] = (i * 2654435761) >>> 0;
const until = performance.now() + busyMs;
while (performance.now() < until) {
  // keep the JS thread busy, as a real host does while preparing weights
}
say('uploading', { bytes });
const buffer = device.createBuffer({ size: bytes, usage: 0x0080 | 0x0004 | 0x0008 }); // STORAGE | COPY_SRC | COPY_DST
device.queue.writeBuffer(buffer, 0, data);
const staging = device.createBuffer({ size: bytes, usage: 0x0001 | 0x0008 }); // MAP_READ | COPY_DST
const encoder = device.createCommandEncoder();
encoder.copyBufferToBuffer(buffer, 0, staging, 0, bytes);
device.queue.submit([encoder.finish()]);
await staging.mapAsync(0x0001);
const back = new Uint32Array(staging.getMappedRange());
let mismatches = 0;
for (let i = 0; i < data.length; i++) if (back[i] !== data[i]) mismatches++;
staging.unmap();
say('completed', { mismatches });
device.destroy();
process.exit(0);
