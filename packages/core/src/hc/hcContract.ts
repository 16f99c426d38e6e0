/**
 * Which rounding contract an HC op follows (model.md): 'atom' keeps every intermediate in
 * fp32 and rounds once per stored value (production); 'hf' rounds where the Hugging Face
 * reference (Qwen4ExpTextGatedResidual and the decoder layer's combine, run as bf16 torch
 * ops) stores a bf16 tensor: each sigmoid, each product, the inject scale and the product
 * y * inj. Its grouped norm and its stream mean round once, as 'atom' does.
 */
export type HcContract = 'atom' | 'hf';

export function parseHcContract(v: unknown): HcContract {
  if (v === 'atom' || v === 'hf') return v;
  throw new Error(`HC contract must be 'atom' or 'hf', got '${String(v)}'`);
}
