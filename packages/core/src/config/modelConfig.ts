// The model configuration: Flash-Next's values (model.md) and small configurations with
// the same structure, so tests run on 2 CPU cores.
export interface HcConfig {
  /** number of residual streams n */
  count: number;
  /** low rank r of the mix GEMMs */
  lowRank: number;
}

/**
 * The QSA indexer of every full-attention layer (HF config indexer_*). Its heads rotate the
 * same first ropeDims dims as the attention heads (HF passes them the same cos/sin).
 */
export interface QsaIndexerConfig {
  /** indexer_n_heads: query heads */
  nHeads: number;
  /** indexer_kv_heads: key heads (1: the reference's kernels and HF's reshape need it) */
  kvHeads: number;
  /** indexer_head_dim */
  headDim: number;
  /** indexer_budget: tokens of the selected blocks; budget / compressRatio blocks are kept */
  budget: number;
  /** indexer_compress_ratio: tokens per block */
  compressRatio: number;
}

export interface AttentionConfig {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  /** dims that get RoPE (partial rotary), NeoX half-split */
  ropeDims: number;
  ropeTheta: number;
  indexer: QsaIndexerConfig;
}

export interface LinearAttentionConfig {
  numKeyHeads: number;
  numValueHeads: number;
  keyHeadDim: number;
  valueHeadDim: number;
  convKernel: number;
}

export interface MoeConfig {
  numExperts: number;
  topK: number;
  intermediate: number;
  sharedIntermediate: number;
  normTopkProb: boolean;
}

/**
 * The PLE fields of HF's Qwen4ExpTextConfig (configuration_qwen4_exp.py). The conv's
 * dilation is not a field: the reference uses ngram_size.
 */
export interface PleConfig {
  /** 0-based decoder layer indices that carry a PLE, increasing: HF's 1-based ple_layer_ids minus 1 */
  layerIds: number[];
  /** ple_embed_dim: width of the concatenated n-gram rows (HF default: hidden_size) */
  embedDim: number;
  /** ple_conv_kernel_size */
  convKernel: number;
  /** ngram_size: largest n-gram; also the conv's dilation */
  ngramSize: number;
  /** heads_per_ngram */
  headsPerNgram: number;
  /** ngram_vocab_size_base: head sizes are the successive primes >= it */
  ngramVocabSizeBase: number;
  /** make_ngram_vocab_size_divisible_by: the table's rows are padded to a multiple of it */
  makeNgramVocabSizeDivisibleBy: number;
  /** seed of the hash multipliers (HF default 1234; absent from the published config.json) */
  seed: number;
  /** split_ngram_parts: the checkpoint stores the padded table as this many row shards */
  splitNgramParts: number;
}

export interface ModelConfig {
  name: string;
  hiddenSize: number;
  numLayers: number;
  /** layer i is full attention iff (i + 1) % fullAttentionInterval === 0 */
  fullAttentionInterval: number;
  rmsNormEps: number;
  vocabSize: number;
  eosTokenId: number;
  hc: HcConfig;
  attention: AttentionConfig;
  linearAttention: LinearAttentionConfig;
  moe: MoeConfig;
  ple: PleConfig;
  mtp: boolean;
}

export type LayerKind = 'attention' | 'linear_attention';

export function layerKind(config: ModelConfig, layer: number): LayerKind {
  return (layer + 1) % config.fullAttentionInterval === 0 ? 'attention' : 'linear_attention';
}
