// The common shape of the pointwise bf16 kernels (add, the HC pointwise ops, the MoE/PLE
// pointwise ops): one invocation per packed bf16 output word (elements 2i and 2i+1), each
// element computed by a WGSL `fn value(i: u32) -> f32` in fp32 and rounded once to bf16 by
// the store. Whole words are written, so no two invocations share one.
import type { KernelBinding, KernelDispatch } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Buf, buf, preamble } from '../wgsl/bindings.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatDispatch, packedWordsMain, writeOutput } from './planParts.ts';

const WG = 64;

export interface WordKernelInput {
  /** WGSL name of the buffer; a bf16 input also gets `fn <name>_f32(i: u32) -> f32` */
  name: string;
  /** an input port (readInput) or a scratch buffer (readScratch) */
  from: KernelBinding;
  dtype: 'bf16' | 'f32';
}

/**
 * A dispatch writing `n` bf16 elements to output port 0. `body` is the body of
 * `fn value(i: u32) -> f32`; it may read the inputs, `rbf(v)` (round to bf16, as f32), the
 * u32 uniforms `u.p0`..`u.p3` and WGSL functions in `helpers` (which must not define
 * `value_bits`). f32 inputs are read as `bitcast<f32>(<name>[i])`.
 */
export function wordKernel(key: string, inputs: WordKernelInput[], n: number, params: number[], body: string, helpers = ''): KernelDispatch {
  if (params.length > 4) throw new Error(`wordKernel ${key}: ${params.length} parameters, at most 4`);
  const words = Math.ceil(n / 2);
  const pre = preamble(
    ['n', 'words', 'p0', 'p1', 'p2', 'p3', 'groupsX'],
    [...inputs.map((b) => (b.dtype === 'bf16' ? bf16Buf(b.name, b.from) : buf(b.name, b.from))), buf('y', writeOutput(0))],
  );
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}
${pre.wgsl}
${ROUND_BF16_WGSL}
${helpers}
fn value(i: u32) -> f32 {
  ${body}
}
fn value_bits(i: u32) -> u32 { return f32_to_bf16(value(i)); }
${packedWordsMain(WG, 'value_bits', 'u.n', 'y')}`;
  return flatDispatch(key, wgsl, pre.bindings, words, WG, [n, words, ...[...params, 0, 0, 0, 0].slice(0, 4)]);
}
