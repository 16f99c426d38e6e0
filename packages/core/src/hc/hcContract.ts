/**
 * Which rounding contract an HC op follows (model.md): 'atom' keeps every intermediate in
 * fp32 and rounds once per stored value (production); 'hf' rounds where the Hugging Face
 * reference stores a bf16 tensor (each sigmoid, product and sum), up to ~1 ulp apart.
 */
export type HcContract = 'atom' | 'hf';

export function parseHcContract(v: unknown): HcContract {
  if (v === 'atom' || v === 'hf') return v;
  throw new Error(`HC contract must be 'atom' or 'hf', got '${String(v)}'`);
}
