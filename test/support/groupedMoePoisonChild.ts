// One moeExperts run with the fast kernels on the emulated device (the grouped GEMMs of
// native/src/gpu/kernels/moe_grouped.cu), for gpuGroupedMoe.test.ts to run with and without
// HCSP_POISON_UNINITIALIZED=1: prints the routed sum's sha256 and its count of non-finite
// values. A kernel reading scratch it did not write (a tile past the table, a row past its
// expert's) would read 0xFF bytes under poison and print other bits.
import { createHash } from 'node:crypto';
import { loadNativeAddon, type NativeTensor } from '../../packages/backend-rocm/src/nativeAddon.ts';
import { mulberry32 } from './mulberry32.ts';

const [T, H, inter, topK, experts, firstExpert, numLocal] = [37, 72, 40, 3, 8, 2, 4];
const r = mulberry32(5);
const bf16 = (n: number, std: number): Uint16Array =>
  Uint16Array.from({ length: n }, () => new Uint16Array(new Float32Array([(r() * 2 - 1) * std]).buffer)[1]!);
const ids: number[] = [];
for (let t = 0; t < T; t++) {
  const mine: number[] = [];
  // experts 2 and 3 (local 0 and 1) on most tokens, local expert 2 (4) never
  while (mine.length < topK) {
    const e = r() < 0.6 ? 2 + (mine.length % 2) : Math.floor(r() * experts);
    if (!mine.includes(e) && e !== 4) mine.push(e);
  }
  ids.push(...mine);
}
const addon = loadNativeAddon();
const gpu = addon.openGpu('emulated', { kernels: 'fast' });
const held: NativeTensor[] = [
  addon.upload('bf16', [T, H], bf16(T * H, 1), gpu),
  addon.upload('i32', [T, topK], Int32Array.from(ids), gpu),
  addon.upload('bf16', [T, topK], bf16(T * topK, 0.5), gpu),
  addon.upload('bf16', [numLocal * 2 * inter, H], bf16(numLocal * 2 * inter * H, 0.1), gpu),
  addon.upload('bf16', [numLocal * H, inter], bf16(numLocal * H * inter, 0.15), gpu),
];
const [routed] = (await addon.run('moeExperts', held, { firstExpert, numLocal, intermediate: inter }, 'exact', gpu)) as NativeTensor[];
const out = new Float32Array(addon.download(routed!));
process.stdout.write(`${createHash('sha256').update(new Uint8Array(out.buffer)).digest('hex')} ${out.filter((v) => !Number.isFinite(v)).length}\n`);
