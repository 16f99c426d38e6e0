// pleNgramEmbed: E[t] = concat over heads h of table[ids[t,h]], as core's pleNgramEmbed
// (layers/ple/pleMath.ts): the ids already carry the head offsets into the padded table,
// so this is a plain row gather, bits copied, one invocation per output word. A GPU kernel
// cannot throw, so an id outside the table writes zeros; the ids come from pleNgramIds,
// whose every id lies inside its head's range, and core's CPU kernel checks them (it throws
// naming the id), as for `embed`.
import type { KernelPlanner } from '../kernelProgram.ts';
import { dims2, flatInvocation, gridFor, readInput, requireDtype, requireShape, requireTensor, uniformWords, writeOutput } from './planParts.ts';

const WG = 64;

const EMBED_WGSL = (() => {
  const inv = flatInvocation(WG, 'u.groupsX');
  return `
struct U { n: u32, words: u32, hd: u32, heads: u32, rows: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read_write> e: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
fn elem(i: u32) -> u32 {
  let rowWidth = u.heads * u.hd;
  let c = i % rowWidth;
  let id = ids[(i / rowWidth) * u.heads + c / u.hd];
  if (id < 0 || u32(id) >= u.rows) { return 0u; }
  let src = u32(id) * u.hd + c % u.hd;
  return (table[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.words) { return; }
  var word = elem(2u * inv);
  if (2u * inv + 1u < u.n) { word = word | (elem(2u * inv + 1u) << 16u); }
  e[inv] = word;
}`;
})();

export const pleNgramEmbedPlanner: KernelPlanner = (inputs, outputs) => {
  const ids = requireTensor(inputs[0], 'pleNgramEmbed: input ids');
  const table = requireTensor(inputs[1], 'pleNgramEmbed: input table');
  const e = requireTensor(outputs[0], 'pleNgramEmbed: output e');
  requireDtype(ids, ['i32'], 'pleNgramEmbed: ids');
  requireDtype(table, ['bf16'], 'pleNgramEmbed: table');
  requireDtype(e, ['bf16'], 'pleNgramEmbed: e');
  const [T, heads] = dims2(ids, 'pleNgramEmbed: ids');
  const [rows, hd] = dims2(table, 'pleNgramEmbed: table');
  // element indices into the table are u32
  if (rows * hd > 2 ** 32) throw new Error(`pleNgramEmbed: table [${rows},${hd}] has more than 2^32 elements`);
  requireShape(e, [T, heads * hd], 'pleNgramEmbed: e');
  const n = T * heads * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  const grid = gridFor(words, WG);
  return {
    scratch: [],
    dispatches: [
      {
        key: 'pleNgramEmbed',
        wgsl: EMBED_WGSL,
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([n, words, hd, heads, rows, grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
