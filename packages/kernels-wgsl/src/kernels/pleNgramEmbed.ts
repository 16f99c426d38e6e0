// pleNgramEmbed: E[t] = concat over heads h of table[ids[t,h]], as core's pleNgramEmbed
// (layers/ple/pleMath.ts): the ids already carry the head offsets into the padded table,
// so this is a plain row gather, bits copied, one invocation per output word. A GPU kernel
// cannot throw, so an id outside the table writes zeros; the ids come from pleNgramIds,
// whose every id lies inside its head's range, and core's CPU kernel checks them (it throws
// naming the id), as for `embed`.
import type { KernelPlanner } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { dims2, flatDispatch, packedWordsMain, readInput, requireShape, requireTyped, writeOutput } from './planParts.ts';

const WG = 64;

const EMBED = preamble(['n', 'words', 'hd', 'heads', 'rows', 'groupsX'], [buf('ids', readInput(0), 'i32'), buf('table', readInput(1)), buf('e', writeOutput(0))]);

const EMBED_WGSL = `
${EMBED.wgsl}
fn elem(i: u32) -> u32 {
  let rowWidth = u.heads * u.hd;
  let c = i % rowWidth;
  let id = ids[(i / rowWidth) * u.heads + c / u.hd];
  if (id < 0 || u32(id) >= u.rows) { return 0u; }
  let src = u32(id) * u.hd + c % u.hd;
  return (table[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
${packedWordsMain(WG, 'elem', 'u.n', 'e')}`;

export const pleNgramEmbedPlanner: KernelPlanner = (inputs, outputs) => {
  const ids = requireTyped(inputs[0], 'pleNgramEmbed: input ids', 'i32');
  const table = requireTyped(inputs[1], 'pleNgramEmbed: input table', 'bf16');
  const e = requireTyped(outputs[0], 'pleNgramEmbed: output e', 'bf16');
  const [T, heads] = dims2(ids, 'pleNgramEmbed: ids');
  const [rows, hd] = dims2(table, 'pleNgramEmbed: table');
  // element indices into the table are u32
  if (rows * hd > 2 ** 32) throw new Error(`pleNgramEmbed: table [${rows},${hd}] has more than 2^32 elements`);
  requireShape(e, [T, heads * hd], 'pleNgramEmbed: e');
  const n = T * heads * hd;
  if (n === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil(n / 2);
  return { scratch: [], dispatches: [flatDispatch('pleNgramEmbed', EMBED_WGSL, EMBED.bindings, words, WG, [n, words, hd, heads, rows])] };
};
