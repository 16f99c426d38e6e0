// embed: e[t] = table[ids[t]]; bits copied. A GPU kernel cannot throw, so an id outside
// the table writes a zero row; the executor must validate ids against the vocabulary before
// upload, as core's CPU kernel does (it throws naming the id).
import type { KernelPlanner } from '../kernelProgram.ts';
import { buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { flatDispatch, packedWordsMain, readInput, writeOutput } from './planParts.ts';

const EMBED = preamble(['tokens', 'vocab', 'h', 'words', 'groupsX'], [buf('ids', readInput(0), 'i32'), buf('table', readInput(1)), buf('e', writeOutput(0))]);

const EMBED_WGSL = `
${EMBED.wgsl}
fn elem(i: u32) -> u32 {
  let t = i / u.h;
  let id = ids[t];
  if (id < 0 || u32(id) >= u.vocab) { return 0u; }
  let src = u32(id) * u.h + i % u.h;
  return (table[src >> 1u] >> ((src & 1u) * 16u)) & 0xffffu;
}
${packedWordsMain(64, 'elem', 'u.tokens * u.h', 'e')}`;

export const embedPlanner: KernelPlanner = (inputs) => {
  const [tokens] = inputs[0]!.shape;
  const [vocab, h] = inputs[1]!.shape;
  if (tokens * h === 0) return { scratch: [], dispatches: [] };
  const words = Math.ceil((tokens * h) / 2);
  return { scratch: [], dispatches: [flatDispatch('embed', EMBED_WGSL, EMBED.bindings, words, 64, [tokens, vocab, h, words])] };
};
