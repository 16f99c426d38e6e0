import type { ModelConfig } from './modelConfig.ts';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function posInt(v: number, what: string): void {
  if (!Number.isInteger(v) || v <= 0) throw new ConfigError(`${what} must be a positive integer, got ${v}`);
}

/** Checks a configuration's internal consistency; returns it unchanged. */
export function validateConfig(c: ModelConfig): ModelConfig {
  posInt(c.hiddenSize, 'hiddenSize');
  posInt(c.numLayers, 'numLayers');
  posInt(c.fullAttentionInterval, 'fullAttentionInterval');
  posInt(c.vocabSize, 'vocabSize');
  if (!Number.isInteger(c.hc.count) || c.hc.count <= 1) {
    throw new ConfigError(`hc_count must be an integer > 1 (hyper-connections need several streams), got ${c.hc.count}`);
  }
  posInt(c.hc.lowRank, 'hc_lowrank');
  if (!(c.rmsNormEps > 0)) throw new ConfigError(`rms_norm_eps must be > 0, got ${c.rmsNormEps}`);
  if (c.eosTokenId < 0 || c.eosTokenId >= c.vocabSize) {
    throw new ConfigError(`eos_token_id ${c.eosTokenId} is outside the vocabulary [0, ${c.vocabSize})`);
  }
  const a = c.attention;
  posInt(a.numHeads, 'attention.numHeads');
  posInt(a.numKvHeads, 'attention.numKvHeads');
  posInt(a.headDim, 'attention.headDim');
  if (a.numHeads % a.numKvHeads !== 0) {
    throw new ConfigError(`attention heads ${a.numHeads} are not a multiple of KV heads ${a.numKvHeads}`);
  }
  if (a.ropeDims <= 0 || a.ropeDims > a.headDim || a.ropeDims % 2 !== 0) {
    throw new ConfigError(`attention.ropeDims ${a.ropeDims} must be even and within (0, headDim ${a.headDim}]`);
  }
  const ix = a.indexer;
  posInt(ix.nHeads, 'attention.indexer.nHeads');
  posInt(ix.headDim, 'attention.indexer.headDim');
  posInt(ix.budget, 'attention.indexer.budget');
  posInt(ix.compressRatio, 'attention.indexer.compressRatio');
  if (ix.kvHeads !== 1)
    throw new ConfigError(`attention.indexer.kvHeads must be 1 (ATOM's QSA operators and HF's indexer assume one key head), got ${ix.kvHeads}`);
  if (ix.budget % ix.compressRatio !== 0) {
    throw new ConfigError(`attention.indexer.budget ${ix.budget} is not a multiple of compressRatio ${ix.compressRatio}`);
  }
  if (a.ropeDims > ix.headDim) {
    throw new ConfigError(`attention.ropeDims ${a.ropeDims} exceeds indexer headDim ${ix.headDim} (the indexer heads rotate the same dims)`);
  }
  const la = c.linearAttention;
  posInt(la.numKeyHeads, 'linearAttention.numKeyHeads');
  posInt(la.numValueHeads, 'linearAttention.numValueHeads');
  posInt(la.keyHeadDim, 'linearAttention.keyHeadDim');
  posInt(la.valueHeadDim, 'linearAttention.valueHeadDim');
  posInt(la.convKernel, 'linearAttention.convKernel');
  if (la.numValueHeads % la.numKeyHeads !== 0) {
    throw new ConfigError(`linear-attention value heads ${la.numValueHeads} are not a multiple of key heads ${la.numKeyHeads}`);
  }
  const m = c.moe;
  posInt(m.numExperts, 'moe.numExperts');
  posInt(m.intermediate, 'moe.intermediate');
  posInt(m.sharedIntermediate, 'moe.sharedIntermediate');
  if (!Number.isInteger(m.topK) || m.topK <= 0 || m.topK > m.numExperts) {
    throw new ConfigError(`moe.topK ${m.topK} must be in [1, numExperts ${m.numExperts}]`);
  }
  const p = c.ple;
  p.layerIds.forEach((id, j) => {
    if (!Number.isInteger(id) || id < 0 || id >= c.numLayers) {
      throw new ConfigError(`PLE layer id ${id} is out of range [0, ${c.numLayers})`);
    }
    // a layer's position in the list seeds its hash (HF sorts and dedups ple_layer_ids)
    if (j > 0 && id <= p.layerIds[j - 1]) throw new ConfigError(`PLE layer ids must be increasing, got [${p.layerIds.join(', ')}]`);
  });
  posInt(p.embedDim, 'ple.embedDim');
  posInt(p.convKernel, 'ple.convKernel');
  if (!Number.isInteger(p.ngramSize) || p.ngramSize < 2) throw new ConfigError(`ple.ngramSize must be an integer >= 2, got ${p.ngramSize}`);
  posInt(p.headsPerNgram, 'ple.headsPerNgram');
  const heads = (p.ngramSize - 1) * p.headsPerNgram;
  if (p.embedDim % heads !== 0) {
    throw new ConfigError(`ple.embedDim ${p.embedDim} is not divisible by its ${heads} n-gram heads`);
  }
  posInt(p.ngramVocabSizeBase, 'ple.ngramVocabSizeBase');
  posInt(p.makeNgramVocabSizeDivisibleBy, 'ple.makeNgramVocabSizeDivisibleBy');
  posInt(p.splitNgramParts, 'ple.splitNgramParts');
  if (!Number.isSafeInteger(p.seed)) throw new ConfigError(`ple.seed must be a safe integer, got ${p.seed}`);
  return c;
}

/** Checks that tensor parallel size tp can shard this configuration's heads and experts. */
export function validateTp(c: ModelConfig, tp: number): void {
  if (!Number.isInteger(tp) || tp <= 0) throw new ConfigError(`tp must be a positive integer, got ${tp}`);
  const checks: [number, string][] = [
    [c.attention.numHeads, 'attention heads'],
    [c.linearAttention.numKeyHeads, 'linear-attention key heads'],
    [c.linearAttention.numValueHeads, 'linear-attention value heads'],
    [c.moe.numExperts, 'MoE experts'],
  ];
  for (const [count, what] of checks) {
    if (count % tp !== 0) throw new ConfigError(`tp ${tp} does not divide the ${count} ${what} of config '${c.name}'`);
  }
  const kv = c.attention.numKvHeads;
  if (kv % tp !== 0 && tp % kv !== 0) {
    throw new ConfigError(`tp ${tp} neither divides nor is a multiple of the ${kv} KV heads of config '${c.name}'`);
  }
}
