// embed: e[t] = table[ids[t]]; bits copied. A GPU kernel cannot throw, so an id outside
// the table writes a zero row; the executor must validate ids against the vocabulary before
// upload, as core's CPU kernel does (it throws naming the id).
import type { KernelPlanner } from '../kernelProgram.ts';
import { flatInvocation, gridFor, readInput, requireDtype, requireTensor, uniformWords, writeOutput } from './planParts.ts';

const EMBED_WGSL = (() => {
  const inv = flatInvocation(64, 'u.groupsX');
  return `
struct U { tokens: u32, vocab: u32, h: u32, words: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> e: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
fn elem(i: u32) -> u32 {
  let t = i / u.h;
  let id = ids[t];
  if (id < 0 || u32(id) >= u.vocab) { return 0u; }
  let src = u32(id) * u.h + i % u.h;
  return (table[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
@compute @workgroup_size(64)
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.words) { return; }
  var word = elem(2u * inv);
  if (2u * inv + 1u < u.tokens * u.h) { word = word | (elem(2u * inv + 1u) << 16u); }
  e[inv] = word;
}`;
})();

export const embedPlanner: KernelPlanner = (inputs, outputs) => {
  const ids = requireTensor(inputs[0], 'embed: input ids');
  const table = requireTensor(inputs[1], 'embed: input table');
  const e = requireTensor(outputs[0], 'embed: output e');
  requireDtype(ids, ['i32'], 'embed: ids');
  requireDtype(table, ['bf16'], 'embed: table');
  if (table.shape.length !== 2) throw new Error(`embed: table must be [vocab,H], got [${table.shape.join(',')}]`);
  const [vocab, h] = table.shape;
  const tokens = ids.shape.reduce((a, b) => a * b, 1);
  if (e.shape.length !== 2 || e.shape[0] !== tokens || e.shape[1] !== h) {
    throw new Error(`embed: e [${e.shape.join(',')}] should be [${tokens},${h}]`);
  }
  if (tokens * h === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil((tokens * h) / 2);
  const grid = gridFor(words, 64);
  return {
    scratch: [],
    dispatches: [
      {
        key: 'embed',
        wgsl: EMBED_WGSL,
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([tokens, vocab, h, words, grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
