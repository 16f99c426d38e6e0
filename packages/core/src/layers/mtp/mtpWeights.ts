import type { ModelConfig } from '../../config/modelConfig.ts';
import type { WeightRef } from '../../graph/graph.ts';
import { hcWeightSpecs } from '../../model/hcWeights.ts';
import type { WeightSpec } from '../../model/weightSpec.ts';

// Checkpoint names of the MTP head (ATOM atom/models/qwen4_exp_mtp.py,
// Qwen4ExpMultiTokenPredictor; HF's modeling_qwen4_exp.py has no MTP module and ignores
// `^mtp.*` on load). The tensors sit at the checkpoint's top level under `mtp.` (ATOM's
// remap_mtp_weight_name maps `mtp.X` to its own `model.X`). The draft layer is one QSA
// decoder layer whose tensors carry the main layers' suffixes under `mtp.layers.0.`
// (attn_hyper_connection.*, self_attn.* with self_attn.indexer.*, mlp_hyper_connection.*,
// mlp.*), with no PLE. embed_tokens and lm_head are the target's (model.embed_tokens.weight,
// lm_head.weight): ATOM's drafter shares them.

export const MTP_LAYER_PREFIX = 'mtp.layers.0';

/** Checkpoint prefix of one of the MTP head's HC modules. */
export function mtpHcPrefix(which: 'attn' | 'mlp' | 'mixer'): string {
  return which === 'mixer' ? 'mtp.hyper_connection_mixer' : `${MTP_LAYER_PREFIX}.${which}_hyper_connection`;
}

/**
 * The MTP head's own tensors and its HC modules (not the draft layer's attention and MoE).
 * Synthetic scales: norm weights are offsets from 1 (RMS1p) ~ N(0, 0.02); fc_* std
 * 1/sqrt(H) map the unit-RMS normed rows to unit-RMS outputs.
 */
export function mtpHeadWeightSpecs(config: ModelConfig): WeightSpec[] {
  const H = config.hiddenSize;
  const width = config.hc.count * H;
  const offset = { kind: 'normal', std: 0.02 } as const;
  const fc = { kind: 'normal', std: 1 / Math.sqrt(H) } as const;
  return [
    { name: 'mtp.pre_fc_norm_embedding.weight', shape: [H], dtype: 'bf16', init: offset },
    { name: 'mtp.pre_fc_norm_hidden.weight', shape: [width], dtype: 'bf16', init: offset },
    { name: 'mtp.fc_embedding.weight', shape: [H, H], dtype: 'bf16', init: fc },
    { name: 'mtp.fc_hidden.weight', shape: [H, H], dtype: 'bf16', init: fc },
    ...hcWeightSpecs(config, mtpHcPrefix('attn'), true),
    ...hcWeightSpecs(config, mtpHcPrefix('mlp'), true),
    ...hcWeightSpecs(config, mtpHcPrefix('mixer'), false),
  ];
}

/** The untied LM head [vocab, H] (HF Qwen4ExpForCausalLM.lm_head; tie_word_embeddings false). */
export function lmHeadWeightSpec(config: ModelConfig): WeightSpec {
  return {
    name: 'lm_head.weight',
    shape: [config.vocabSize, config.hiddenSize],
    dtype: 'bf16',
    init: { kind: 'normal', std: 1 / Math.sqrt(config.hiddenSize) },
  };
}

/**
 * Rank `rank`'s vocab rows of lm_head.weight (ATOM ParallelLMHead: vocab-parallel, rows
 * [r*V/tp, (r+1)*V/tp)); the whole tensor at tp 1.
 */
export function lmHeadRankWeight(config: ModelConfig, rank: number, tp: number): WeightRef {
  const V = config.vocabSize;
  if (!Number.isInteger(tp) || tp < 1 || V % tp !== 0) throw new Error(`lm_head: tp ${tp} does not divide the vocabulary ${V} of config '${config.name}'`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= tp) throw new Error(`lm_head: rank ${rank} is outside [0, ${tp})`);
  const name = lmHeadWeightSpec(config).name;
  return tp === 1 ? { name } : { name, slice: { axis: 0, ranges: [[(rank * V) / tp, ((rank + 1) * V) / tp]] } };
}
