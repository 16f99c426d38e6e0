// pleNgramEmbed: E[t] = concat_j table_j[ids[t,j]], tables stacked along rows (head 0
// first), bits copied: one invocation per output word. The per-head row offsets and table
// sizes are model constants, baked into the WGSL (and the cache key). A GPU kernel cannot
// throw, so an id outside its head's table writes zeros; the ids come from pleNgramIds,
// which reduces every hash mod its head's size, and core's CPU kernel checks them (it throws
// naming the id), as for `embed`.
import type { KernelPlanner } from '../kernelProgram.ts';
import { dims2, flatInvocation, gridFor, readInput, requireDtype, requireShape, requireTensor, uniformWords, writeOutput } from './planParts.ts';

const WG = 64;

function embedWgsl(vocabSizes: readonly number[]): string {
  const heads = vocabSizes.length;
  const offsets: number[] = [];
  let rows = 0;
  for (const v of vocabSizes) {
    offsets.push(rows);
    rows += v;
  }
  const inv = flatInvocation(WG, 'u.groupsX');
  const list = (xs: number[]) => xs.map((x) => `${x}u`).join(', ');
  return `
const HEADS: u32 = ${heads}u;
var<private> OFFSETS: array<u32, ${heads}> = array<u32, ${heads}>(${list(offsets)});
var<private> SIZES: array<u32, ${heads}> = array<u32, ${heads}>(${list([...vocabSizes])});
struct U { n: u32, words: u32, hd: u32, groupsX: u32 }
@group(0) @binding(0) var<storage, read> ids: array<i32>;
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read_write> e: array<u32>;
@group(0) @binding(3) var<uniform> u: U;
fn elem(i: u32) -> u32 {
  let rowWidth = HEADS * u.hd;
  let c = i % rowWidth;
  let j = c / u.hd;
  let id = ids[(i / rowWidth) * HEADS + j];
  if (id < 0 || u32(id) >= SIZES[j]) { return 0u; }
  let src = (OFFSETS[j] + u32(id)) * u.hd + c % u.hd;
  return (tables[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
@compute @workgroup_size(${WG})
fn main(${inv.params}) {
  ${inv.body}
  if (inv >= u.words) { return; }
  var word = elem(2u * inv);
  if (2u * inv + 1u < u.n) { word = word | (elem(2u * inv + 1u) << 16u); }
  e[inv] = word;
}`;
}

export const pleNgramEmbedPlanner: KernelPlanner = (inputs, outputs, attrs) => {
  const ids = requireTensor(inputs[0], 'pleNgramEmbed: input ids');
  const tables = requireTensor(inputs[1], 'pleNgramEmbed: input tables');
  const e = requireTensor(outputs[0], 'pleNgramEmbed: output e');
  requireDtype(ids, ['i32'], 'pleNgramEmbed: ids');
  requireDtype(tables, ['bf16'], 'pleNgramEmbed: tables');
  requireDtype(e, ['bf16'], 'pleNgramEmbed: e');
  const vocabSizes = attrs.vocabSizes;
  if (!Array.isArray(vocabSizes) || vocabSizes.length === 0 || vocabSizes.some((v) => !Number.isInteger(v) || v < 1)) {
    throw new Error(`pleNgramEmbed: attribute vocabSizes = ${JSON.stringify(vocabSizes)} is not a list of positive integers`);
  }
  const [T, heads] = dims2(ids, 'pleNgramEmbed: ids');
  if (heads !== vocabSizes.length) throw new Error(`pleNgramEmbed: ids have ${heads} heads, vocabSizes lists ${vocabSizes.length}`);
  const [rows, hd] = dims2(tables, 'pleNgramEmbed: tables');
  const totalRows = (vocabSizes as number[]).reduce((a, v) => a + v, 0);
  if (rows !== totalRows) throw new Error(`pleNgramEmbed: tables have ${rows} rows, the heads' sizes sum to ${totalRows}`);
  requireShape(e, [T, heads * hd], 'pleNgramEmbed: e');
  const n = T * heads * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  const grid = gridFor(words, WG);
  return {
    scratch: [],
    dispatches: [
      {
        key: `pleNgramEmbed-${vocabSizes.join(',')}`,
        wgsl: embedWgsl(vocabSizes as number[]),
        bindings: [readInput(0), readInput(1), writeOutput(0)],
        uniforms: uniformWords([n, words, hd, grid.groupsX]),
        workgroups: grid.workgroups,
      },
    ],
  };
};
