// The summing collectives over the stacked input [tp, ...perRank] (every rank's buffer one
// after another), in the orders of core/collectives/reduceOrder.ts:
//   ring:    acc = x[c+1]; acc = bf(x[c+2] + acc); ...; acc = bf(x[c] + acc), c = the owner
//   oneshot: fp32 sum in rank order 0..tp-1, one rounding (tp = 1: bits pass through)
//   ordered: acc = x0; acc = bf(acc + x1); ...
// Owners: allReduce 'ring' follows core/collectives/ringAllReduce.ts (loops of
// channels*tp*chunkElems elements, the last loop's chunk shrunk to a 16-element multiple);
// reduceScatter's rows [r*C, (r+1)*C) are owned by rank r. One invocation per output word.
import type { KernelPlanner, TensorInfo } from '../kernelProgram.ts';
import { BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { gridFor, numelOf, packedWordsMain, readInput, uniformWords, writeOutput } from './planParts.ts';

type Algorithm = 'ring' | 'oneshot' | 'ordered';
type Ownership = 'ringChunks' | 'rowBlocks';

/** NCCL's alignment of a ring loop's last blocks, as core's ringAllReduce.ts (RING_ALIGN_ELEMS). */
const ALIGN_ELEMS = 16;

const REDUCE = preamble(['n', 'tp', 'words', 'groupsX', 'a', 'b', 'c', 'd'], [buf('x', readInput(0)), buf('y', writeOutput(0))]);

function reduceWgsl(algorithm: Algorithm, ownership: Ownership): string {
  const owner =
    ownership === 'rowBlocks'
      ? 'return i / u.a;'
      : `var b: u32;
  if (i >= u.c) { b = (i - u.c) / u.d; } else { b = (i % u.a) / u.b; }
  return b % u.tp;`;
  let sum: string;
  if (algorithm === 'ring') {
    sum = `let c = owner(i);
  var acc = xbits((c + 1u) % u.tp, i);
  for (var hop = 2u; hop <= u.tp; hop = hop + 1u) {
    acc = f32_to_bf16(bf16_bits_to_f32(xbits((c + hop) % u.tp, i)) + bf16_bits_to_f32(acc));
  }
  return acc;`;
  } else if (algorithm === 'ordered') {
    sum = `var acc = xbits(0u, i);
  for (var r = 1u; r < u.tp; r = r + 1u) { acc = f32_to_bf16(bf16_bits_to_f32(acc) + bf16_bits_to_f32(xbits(r, i))); }
  return acc;`;
  } else {
    sum = `if (u.tp == 1u) { return xbits(0u, i); }
  var acc = bf16_bits_to_f32(xbits(0u, i));
  for (var r = 1u; r < u.tp; r = r + 1u) { acc = acc + bf16_bits_to_f32(xbits(r, i)); }
  return f32_to_bf16(acc);`;
  }
  return `${BF16_WGSL}
${REDUCE.wgsl}
fn xbits(rank: u32, i: u32) -> u32 {
  let k = rank * u.n + i;
  return (x[k >> 1u] >> ((k & 1u) * 16u)) & 0xffffu;
}
fn owner(i: u32) -> u32 {
  ${owner}
}
fn reduced(i: u32) -> u32 {
  ${sum}
}
${packedWordsMain(64, 'reduced', 'u.n', 'y')}`;
}

/** tp and one rank's element count, checking the device's stacking (which no declaration describes). */
function stacked(inputs: (TensorInfo | null)[], outputs: (TensorInfo | null)[], attrs: Record<string, unknown>, op: string) {
  const x = inputs[0]!;
  const y = outputs[0]!;
  const tp = attrs.tp as number;
  if (x.shape[0] !== tp) throw new Error(`${op}: stacked input [${x.shape.join(',')}] does not lead with tp = ${tp}`);
  const n = numelOf(x.shape.slice(1));
  if (numelOf(y.shape) !== n) throw new Error(`${op}: output [${y.shape.join(',')}] does not hold the ${n} elements of one rank`);
  return { tp, n };
}

function plan(algorithm: Algorithm, ownership: Ownership, n: number, tp: number, ownerParams: number[]) {
  const words = Math.ceil(n / 2);
  const grid = gridFor(words, 64);
  return {
    scratch: [],
    dispatches:
      n === 0
        ? []
        : [
            {
              key: `reduce-${algorithm}-${ownership}`,
              wgsl: reduceWgsl(algorithm, ownership),
              bindings: REDUCE.bindings,
              uniforms: uniformWords([n, tp, words, grid.groupsX, ...ownerParams]),
              workgroups: grid.workgroups,
            },
          ],
  };
}

export const allReducePlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const { tp, n } = stacked(inputs, outputs, attrs, 'allReduce');
  const algorithm = attrs.algorithm as Algorithm;
  const channels = attrs.channels as number;
  const chunkElems = attrs.chunkElems as number;
  const blocksPerLoop = channels * tp;
  const loopSize = blocksPerLoop * chunkElems;
  if (loopSize > 0xffffffff) throw new Error(`allReduce: channels ${channels} * tp ${tp} * chunkElems ${chunkElems} exceeds u32`);
  // Every loop but the last has blocks of chunkElems; the last one's block size is
  // min(chunkElems, alignUp(ceil(rest / blocksPerLoop), 16)).
  const lastLoop = n === 0 ? 0 : Math.floor((n - 1) / loopSize) * loopSize;
  const lastChunk = Math.min(chunkElems, Math.ceil(Math.ceil((n - lastLoop) / blocksPerLoop) / ALIGN_ELEMS) * ALIGN_ELEMS);
  return plan(algorithm, 'ringChunks', n, tp, [loopSize, chunkElems, lastLoop, Math.max(1, lastChunk)]);
};

export const reduceScatterPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const { tp, n } = stacked(inputs, outputs, attrs, 'reduceScatter');
  return plan(attrs.algorithm as Algorithm, 'rowBlocks', n, tp, [Math.max(1, n / tp), 0, 0, 0]);
};
