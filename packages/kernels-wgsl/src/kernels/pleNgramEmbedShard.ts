// pleNgramEmbedShard: a rank's vocab slice of the PLE n-gram table. e[t, h] = slice[id - rowStart]
// where the id falls in the slice, bf16 -0.0 (0x8000) where another rank's slice holds it: the
// identity of the ranks' all-reduce. Bits copied. A GPU kernel cannot throw: an id outside the
// whole table (which pleNgramIds never makes: its ids are offset + key mod size of each head)
// also reads -0.0; core's CPU kernel raises it naming the id.
import type { KernelPlanner } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, packedWordsMain, readInput, writeOutput } from './planParts.ts';

const SHARD = preamble(
  ['lookups', 'rows', 'd', 'rowStart', 'words', 'groupsX'],
  [buf('ids', readInput(0), 'i32'), buf('table', readInput(1)), buf('e', writeOutput(0))],
);

const SHARD_WGSL = `
${SHARD.wgsl}
fn elem(i: u32) -> u32 {
  let id = ids[i / u.d];
  if (id < i32(u.rowStart) || u32(id) - u.rowStart >= u.rows) { return 0x8000u; }
  let src = (u32(id) - u.rowStart) * u.d + i % u.d;
  return (table[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
${packedWordsMain(64, 'elem', 'u.lookups * u.d', 'e')}`;

export const pleNgramEmbedShardPlanner: KernelPlanner = (inputs, _outputs, attrs) => {
  const op = 'pleNgramEmbedShard';
  const rowStart = attrs.rowStart as number;
  const [rows, d] = inputs[1]!.shape;
  const [T, heads] = inputs[0]!.shape;
  const lookups = T * heads;
  if (lookups * d === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil((lookups * d) / 2);
  return { scratch: [], dispatches: [flatDispatch(op, SHARD_WGSL, SHARD.bindings, words, 64, [lookups, rows, d, rowStart, words])] };
};
