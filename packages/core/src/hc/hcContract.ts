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

/**
 * The rounding contract a whole forward follows: the HC contracts above, or 'hf-eager':
 * 'hf' plus where HF's eager PyTorch paths (the torch fallbacks an HF dump on CPU runs) store
 * bf16 tensors that the fused kernels keep in fp32: the GatedDeltaNet conv output before its
 * SiLU, the eager attention's scores and probabilities, the routed experts' bf16 index_add_
 * accumulator. Each sub-layer builder turns it into op attributes (SubLayerContext.eager).
 */
export type RoundingContract = HcContract | 'hf-eager';

export const ROUNDING_CONTRACTS: readonly RoundingContract[] = ['atom', 'hf', 'hf-eager'];

export function parseRoundingContract(v: unknown): RoundingContract {
  if (v === 'atom' || v === 'hf' || v === 'hf-eager') return v;
  throw new Error(`rounding contract must be 'atom', 'hf' or 'hf-eager', got '${String(v)}'`);
}

/** the HC ops' part of a forward's contract: 'hf-eager' rounds the HC module as 'hf' does */
export function hcContractOf(c: RoundingContract): HcContract {
  return c === 'hf-eager' ? 'hf' : c;
}
