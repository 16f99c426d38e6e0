// The common shape of the pointwise bf16 kernels (add, the HC pointwise ops, the MoE/PLE
// pointwise ops): one invocation per packed bf16 output word (elements 2i and 2i+1), each
// element computed by a WGSL `fn value(i: u32) -> f32` in fp32 and rounded once to bf16 by
// the store. Whole words are written, so no two invocations share one.
import type { KernelBinding, KernelDispatch } from '../kernelProgram.ts';
import { BF16_WGSL, ROUND_BF16_WGSL } from '../wgsl/bf16.wgsl.ts';
import { bf16Element } from '../wgsl/elementAccess.wgsl.ts';
import { FP32_MATH_WGSL } from '../wgsl/fp32Math.wgsl.ts';
import { flatDispatch, flatMain, writeOutput } from './planParts.ts';

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
 * u32 uniforms `u.p0`..`u.p3` and WGSL functions in `helpers`. f32 inputs are read as
 * `bitcast<f32>(<name>[i])`.
 */
export function wordKernel(key: string, inputs: WordKernelInput[], n: number, params: number[], body: string, helpers = ''): KernelDispatch {
  if (params.length > 4) throw new Error(`wordKernel ${key}: ${params.length} parameters, at most 4`);
  const words = Math.ceil(n / 2);
  const decls = inputs.map(
    (b, i) => `@group(0) @binding(${i}) var<storage, read> ${b.name}: array<u32>;${b.dtype === 'bf16' ? `\n${bf16Element(b.name)}` : ''}`,
  );
  const wgsl = `${BF16_WGSL}${FP32_MATH_WGSL}
struct U { n: u32, words: u32, p0: u32, p1: u32, p2: u32, p3: u32, groupsX: u32 }
${decls.join('\n')}
@group(0) @binding(${inputs.length}) var<storage, read_write> y: array<u32>;
@group(0) @binding(${inputs.length + 1}) var<uniform> u: U;
${ROUND_BF16_WGSL}
${helpers}
fn value(i: u32) -> f32 {
  ${body}
}
${flatMain(
    WG,
    'u.words',
    `var word = f32_to_bf16(value(2u * inv));
  if (2u * inv + 1u < u.n) { word = word | (f32_to_bf16(value(2u * inv + 1u)) << 16u); }
  y[inv] = word;`,
  )}`;
  const bindings = [...inputs.map((b) => b.from), writeOutput(0)];
  return flatDispatch(key, wgsl, bindings, words, WG, [n, words, ...[...params, 0, 0, 0, 0].slice(0, 4)]);
}
