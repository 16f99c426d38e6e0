import type { ModelConfig } from '../../config/modelConfig.ts';
import { tensor, type Tensor } from '../../tensor/tensor.ts';

/**
 * The RoPE cos/sin tables for positions 0..tokens-1 (a prefill from an empty cache), f32
 * [tokens, ropeDims/2] each. Built on the host and fed to the graph as inputs, because
 * Math.cos, WGSL cos and HIP cos all differ in the last bit: computing them once here
 * makes every backend use the same values. Recipe (HF's inv_freq and freqs, but in
 * float64 where torch uses fp32, then rounded to fp32):
 *   inv_freq[i] = fr(1 / theta^(2i / ropeDims)),  angle = fr(pos * inv_freq[i])
 *   cos = fr(Math.cos(angle)), sin = fr(Math.sin(angle))
 * (pos * inv_freq is exact in float64, so fr gives the correctly rounded fp32 product.)
 */
export function ropeTables(config: ModelConfig, tokens: number): { cos: Tensor; sin: Tensor } {
  if (!Number.isInteger(tokens) || tokens <= 0) throw new Error(`ropeTables: tokens must be a positive integer, got ${tokens}`);
  const { ropeDims, ropeTheta } = config.attention;
  const half = ropeDims / 2;
  const invFreq = new Float64Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = Math.fround(1 / ropeTheta ** ((2 * i) / ropeDims));
  const cos = new Float32Array(tokens * half);
  const sin = new Float32Array(tokens * half);
  for (let pos = 0; pos < tokens; pos++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(pos * invFreq[i]);
      cos[pos * half + i] = Math.cos(angle);
      sin[pos * half + i] = Math.sin(angle);
    }
  }
  return { cos: tensor('f32', [tokens, half], cos), sin: tensor('f32', [tokens, half], sin) };
}
