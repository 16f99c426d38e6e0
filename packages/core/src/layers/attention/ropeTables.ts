import type { ModelConfig } from '../../config/modelConfig.ts';
import { f32ToBf16 } from '../../numerics/bf16.ts';
import { tensor, type Tensor } from '../../tensor/tensor.ts';

// The RoPE cos/sin tables, built on the host and fed to the graph as inputs, because
// Math.cos, WGSL cos and HIP cos all differ in the last bit: computing them once here makes
// every backend use the same values.
//
// inv_freq as HF computes it (Qwen4ExpTextRotaryEmbedding.compute_default_rope_parameters,
// and aiter's RotaryEmbedding._compute_inv_freq, which ATOM uses), all in fp32:
//   e_i = fr(2i / ropeDims), p_i = powf(theta, e_i), inv_freq[i] = fr(1 / p_i)
// powf here is the correctly rounded one (Math.pow in float64, then fr); torch's CPU pow
// (Sleef powf u10) and glibc's powf give the same bits for every exponent of the presets.
// Rounding 1 / theta^(2i/d) once in float64 instead (this file's old recipe) differs by one
// ulp in 15 of Flash-Next's 32 frequencies.
// angle = fr(pos * inv_freq[i]) (HF: an fp32 [half x 1] @ [1 x T] product; ATOM: an fp32
// outer product), exact for positions below 2^24.

/** inv_freq[i], i < ropeDims / 2, fp32, as HF computes it. */
export function ropeInvFreq(ropeDims: number, theta: number): Float32Array {
  if (!Number.isInteger(ropeDims) || ropeDims <= 0 || ropeDims % 2 !== 0)
    throw new Error(`ropeInvFreq: ropeDims must be a positive even integer, got ${ropeDims}`);
  const fr = Math.fround;
  const inv = new Float32Array(ropeDims / 2);
  const thetaF = fr(theta);
  for (let i = 0; i < inv.length; i++) inv[i] = fr(1 / fr(thetaF ** fr((2 * i) / ropeDims)));
  return inv;
}

function checkTokens(what: string, tokens: number): void {
  if (!Number.isInteger(tokens) || tokens <= 0) throw new Error(`${what}: tokens must be a positive integer, got ${tokens}`);
}

/**
 * bf16 tables [tokens, ropeDims/2] for positions 0..tokens-1, as HF's rotary embedding
 * returns them (`cos.to(x.dtype)`) and as ATOM stores its cos/sin cache:
 * c = bf(fr(cos(angle))), s = bf(fr(sin(angle))).
 * Math.cos/Math.sin are float64 functions (V8's fdlibm port, under 1 ulp of float64), so
 * fr of them is the correctly rounded fp32 cos/sin and the table is deterministic in every
 * JS engine. torch evaluates an fp32 cos of about 1 ulp (Sleef u10 on CPU, the device's
 * cosf on GPU) and then rounds to bf16; the two agree unless the true value lies within
 * about one fp32 ulp of a bf16 rounding midpoint. For Flash-Next (64 dims, theta 1e7) over
 * positions 0..8191 Sleef's cosf/sinf u10 give a different bf16 in 1 of 262144 entries
 * (sin, position 3269, i = 15); every other entry is the same.
 */
export function ropeTablesBf16(config: ModelConfig, tokens: number): { cos: Tensor; sin: Tensor } {
  checkTokens('ropeTablesBf16', tokens);
  const { ropeDims, ropeTheta } = config.attention;
  const invFreq = ropeInvFreq(ropeDims, ropeTheta);
  const half = invFreq.length;
  const cos = new Uint16Array(tokens * half);
  const sin = new Uint16Array(tokens * half);
  for (let pos = 0; pos < tokens; pos++) {
    for (let i = 0; i < half; i++) {
      const angle = Math.fround(pos * invFreq[i]);
      // f32ToBf16 rounds to fp32 first, then to bf16, as torch's fp32 -> bf16 cast does
      cos[pos * half + i] = f32ToBf16(Math.cos(angle));
      sin[pos * half + i] = f32ToBf16(Math.sin(angle));
    }
  }
  return { cos: tensor('bf16', [tokens, half], cos), sin: tensor('bf16', [tokens, half], sin) };
}
