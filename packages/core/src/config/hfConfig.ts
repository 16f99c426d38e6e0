// Hugging Face config.json <-> ModelConfig. The fields and their defaults are those of HF's
// Qwen4ExpTextConfig (transformers src/transformers/models/qwen4_exp/configuration_qwen4_exp.py):
// save_pretrained writes only the fields that differ from the class defaults, so an absent
// field takes HF's default (the published Flash-Next config.json has no `seed`, for one).
// Fields whose HF default is None and that this model needs (eos, RoPE theta, the QSA
// indexer) are required. The text config sits at the top level (Qwen4ExpTextConfig,
// model_type qwen4_exp_text) or under `text_config` (Qwen4ExpConfig, model_type qwen4_exp).
import { lstatSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errnoReason } from '../io/fileErrors.ts';
import { JSON_LIMITS, JsonInputError, readJsonInput } from '../io/jsonFile.ts';
import { layerKind, type LayerKind, type ModelConfig } from './modelConfig.ts';
import { getConfig, PRESETS } from './presets.ts';
import { ConfigError, validateConfig } from './validate.ts';

// HF's layer types (validate_architecture) plus the ones ATOM accepts: its Qwen4ExpDecoderLayer
// notes that the checkpoint writes "full_attention" for the QSA layers and that another
// transformers version writes "qwen_sparse_attention". HF's configuration (configuration_qwen4_exp.py,
// Qwen4ExpTextConfig) accepts only linear_attention, hybrid_indexed (a QSA layer that is also a
// PLE layer) and deepseek_sparse_attention (the other QSA layers): what hcsp writes (hfLayerTypes).
const LAYER_TYPES: Readonly<Record<string, LayerKind>> = {
  linear_attention: 'linear_attention',
  full_attention: 'attention',
  qwen_sparse_attention: 'attention',
  hybrid_indexed: 'attention',
  deepseek_sparse_attention: 'attention',
};

// ATOM's MTP drafter (qwen4_exp_mtp.py) builds its one draft layer from these types only.
const MTP_LAYER_TYPES = ['full_attention', 'qwen_sparse_attention'];

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Reads one config object's fields; every error names the field as it appears in the file. */
class Fields {
  constructor(
    private readonly obj: Json,
    private readonly label: string,
    private readonly where: string,
  ) {}

  error(field: string, what: string): ConfigError {
    return new ConfigError(`${this.label}: field '${this.where}${field}' ${what}`);
  }

  /** the raw value; null counts as absent (HF then uses its default) */
  raw(field: string): unknown {
    const v = this.obj[field];
    return v === null ? undefined : v;
  }

  has(field: string): boolean {
    return this.raw(field) !== undefined;
  }

  int(field: string, fallback?: number, min = 1): number {
    const v = this.raw(field) ?? fallback;
    if (v === undefined) throw this.error(field, 'is missing');
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw this.error(field, `must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return v;
  }

  positive(field: string, fallback?: number): number {
    const v = this.raw(field) ?? fallback;
    if (v === undefined) throw this.error(field, 'is missing');
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw this.error(field, `must be a positive number, got ${JSON.stringify(v)}`);
    return v;
  }

  bool(field: string, fallback: boolean): boolean {
    const v = this.raw(field) ?? fallback;
    if (typeof v !== 'boolean') throw this.error(field, `must be true or false, got ${JSON.stringify(v)}`);
    return v;
  }

  str(field: string): string | undefined {
    const v = this.raw(field);
    if (v !== undefined && typeof v !== 'string') throw this.error(field, `must be a string, got ${JSON.stringify(v)}`);
    return v;
  }

  intList(field: string): number[] | undefined {
    const v = this.raw(field);
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'number' && Number.isSafeInteger(x)))
      throw this.error(field, `must be a list of integers, got ${JSON.stringify(v)}`);
    return v as number[];
  }

  object(field: string): Fields | undefined {
    const v = this.raw(field);
    if (v === undefined) return undefined;
    if (!isObject(v)) throw this.error(field, `must be an object, got ${JSON.stringify(v)}`);
    return new Fields(v, this.label, `${this.where}${field}.`);
  }
}

/** full_attention_interval from layer_types, which must be that pattern (all ModelConfig can say). */
function intervalFromLayerTypes(f: Fields, numLayers: number): number {
  const types = f.raw('layer_types');
  if (types === undefined) return f.int('full_attention_interval', 4);
  if (!Array.isArray(types)) throw f.error('layer_types', `must be a list, got ${JSON.stringify(types)}`);
  if (types.length !== numLayers) throw f.error('layer_types', `has ${types.length} entries for num_hidden_layers ${numLayers}`);
  const kinds = types.map((t, i) => {
    const kind = typeof t === 'string' && Object.hasOwn(LAYER_TYPES, t) ? LAYER_TYPES[t] : undefined;
    if (!kind) throw f.error(`layer_types[${i}]`, `is ${JSON.stringify(t)}, not a known layer type (${Object.keys(LAYER_TYPES).join(', ')})`);
    return kind;
  });
  const firstAttention = kinds.indexOf('attention');
  const interval = firstAttention < 0 ? numLayers + 1 : firstAttention + 1;
  kinds.forEach((kind, i) => {
    if (kind !== ((i + 1) % interval === 0 ? 'attention' : 'linear_attention')) {
      throw f.error(
        'layer_types',
        `is not one full-attention layer every ${interval} layers (layer ${i} is ${types[i]}): hcsp describes the layer pattern only as "layer i is full attention iff (i + 1) % k == 0"`,
      );
    }
  });
  return interval;
}

/**
 * RoPE theta and rotary dims: HF's rope_parameters, or the older top-level rope_theta /
 * partial_rotary_factor. mrope_section / mrope_interleaved are ignored: text positions are
 * equal on the three mRoPE axes, where mRoPE is plain 1-D RoPE.
 */
function rope(f: Fields, headDim: number): { theta: number; dims: number } {
  const p = f.object('rope_parameters');
  if (p) {
    const type = p.str('rope_type');
    if (type !== undefined && type !== 'default') throw p.error('rope_type', `is '${type}': only the default RoPE is implemented`);
  } else if (f.has('rope_scaling')) {
    throw f.error('rope_scaling', 'is set: only the default RoPE is implemented');
  }
  const src = p ?? f;
  const theta = src.positive('rope_theta');
  const factor = src.positive('partial_rotary_factor', 1);
  // HF: dim = int(head_dim * partial_rotary_factor)
  const dims = Math.trunc(headDim * factor);
  if (factor > 1 || dims <= 0 || dims % 2 !== 0) {
    throw src.error('partial_rotary_factor', `${factor} gives ${dims} rotary dims of head_dim ${headDim}: they must be even and within (0, head_dim]`);
  }
  return { theta, dims };
}

function mtpPresent(f: Fields, ropeTheta: number): boolean {
  const mtp = f.object('mtp');
  if (f.bool('mtp_use_dedicated_embeddings', false))
    throw f.error('mtp_use_dedicated_embeddings', 'is true: the MTP head shares embed_tokens (ATOM refuses dedicated embeddings)');
  if (mtp) {
    const types = mtp.raw('layer_types');
    if (types !== undefined && (!Array.isArray(types) || types.length !== 1 || !MTP_LAYER_TYPES.includes(types[0] as string))) {
      throw mtp.error('layer_types', `is ${JSON.stringify(types)}: the MTP head is one draft layer of type ${MTP_LAYER_TYPES.join(' or ')}`);
    }
    // ATOM gives the draft layer this theta; the graph has one RoPE table for both
    if (mtp.has('rope_theta') && mtp.positive('rope_theta') !== ropeTheta)
      throw mtp.error('rope_theta', `is ${mtp.raw('rope_theta')}, not the model's ${ropeTheta}: a separate MTP RoPE theta is not implemented`);
    if (mtp.has('mtp_use_hidden_state_from_layer')) throw mtp.error('mtp_use_hidden_state_from_layer', 'is set: the MTP head reads the final HC state');
  }
  if (!f.has('mtp_num_hidden_layers')) return mtp !== undefined;
  const layers = f.int('mtp_num_hidden_layers', undefined, 0);
  if (layers > 1) throw f.error('mtp_num_hidden_layers', `is ${layers}: the MTP head has one draft layer`);
  return layers === 1;
}

/**
 * A ModelConfig from a parsed HF config.json. `label` names the file in errors, `name`
 * becomes the config's name. Every field the model uses is read and checked; unknown
 * fields are ignored (configs carry many that do not shape the model).
 */
export function parseHfConfig(json: unknown, label: string, name = label): ModelConfig {
  if (!isObject(json)) throw new ConfigError(`${label}: the config is not a JSON object`);
  const top = new Fields(json, label, '');
  const modelType = top.str('model_type');
  if (modelType !== undefined && modelType !== 'qwen4_exp' && modelType !== 'qwen4_exp_text') {
    throw top.error('model_type', `is '${modelType}', not a Qwen4-Exp model (qwen4_exp or qwen4_exp_text)`);
  }
  const nested = top.object('text_config');
  if (modelType === 'qwen4_exp' && !nested) throw top.error('text_config', 'is missing (model_type qwen4_exp keeps the text model there)');
  const f = nested ?? top;
  const textType = nested?.str('model_type');
  if (textType !== undefined && textType !== 'qwen4_exp_text') throw nested!.error('model_type', `is '${textType}', not qwen4_exp_text`);

  for (const cfg of nested ? [top, f] : [f]) {
    const dtype = cfg.str('dtype') ?? cfg.str('torch_dtype');
    if (dtype !== undefined && dtype !== 'bfloat16') throw cfg.error(cfg.has('dtype') ? 'dtype' : 'torch_dtype', `is '${dtype}': the model runs in bfloat16`);
    if (cfg.bool('tie_word_embeddings', false)) throw cfg.error('tie_word_embeddings', 'is true: hcsp reads an untied lm_head.weight');
  }
  const hiddenAct = f.str('hidden_act') ?? 'silu';
  if (hiddenAct !== 'silu') throw f.error('hidden_act', `is '${hiddenAct}': the experts and the GatedDeltaNet conv use silu`);
  const gate = f.str('output_gate_type') ?? hiddenAct;
  if (gate !== 'sigmoid') {
    const from = f.has('output_gate_type') ? '' : ` (absent: HF falls back to hidden_act '${hiddenAct}')`;
    throw f.error('output_gate_type', `is '${gate}'${from}: hcsp implements the sigmoid output gate (ATOM requires output_gate_type=sigmoid)`);
  }
  if (f.bool('attention_bias', false)) throw f.error('attention_bias', 'is true: the attention projections have no bias here');

  const hiddenSize = f.int('hidden_size', 2048);
  const numLayers = f.int('num_hidden_layers', 40);
  const vocabSize = f.int('vocab_size', 248320);
  const eosRaw = f.raw('eos_token_id');
  const eos = Array.isArray(eosRaw) ? eosRaw[0] : eosRaw;
  if (eos === undefined) throw f.error('eos_token_id', 'is missing (the PLE resets its n-grams at EOS)');
  if (typeof eos !== 'number' || !Number.isSafeInteger(eos) || eos < 0 || eos >= vocabSize) {
    throw f.error('eos_token_id', `must be a token id in [0, vocab_size ${vocabSize}), got ${JSON.stringify(eosRaw)}`);
  }

  const numHeads = f.int('num_attention_heads', 16);
  const numKvHeads = f.int('num_key_value_heads', 2);
  if (numHeads % numKvHeads !== 0) throw f.error('num_key_value_heads', `${numKvHeads} does not divide num_attention_heads ${numHeads}`);
  const headDim = f.int('head_dim', 256);
  const r = rope(f, headDim);
  const indexer = {
    nHeads: f.int('indexer_n_heads'),
    kvHeads: f.int('indexer_kv_heads'),
    headDim: f.int('indexer_head_dim'),
    budget: f.int('indexer_budget'),
    compressRatio: f.int('indexer_compress_ratio'),
  };
  if (indexer.kvHeads !== 1) throw f.error('indexer_kv_heads', `is ${indexer.kvHeads}: Qwen4-Exp QSA requires one indexer key head`);
  if (indexer.budget % indexer.compressRatio !== 0)
    throw f.error('indexer_budget', `${indexer.budget} is not a multiple of indexer_compress_ratio ${indexer.compressRatio}`);
  if (r.dims > indexer.headDim)
    throw f.error('indexer_head_dim', `${indexer.headDim} is smaller than the ${r.dims} rotary dims (the indexer heads rotate the same dims)`);

  const linearKeyHeads = f.int('linear_num_key_heads', 16);
  const linearValueHeads = f.int('linear_num_value_heads', 32);
  if (linearValueHeads % linearKeyHeads !== 0)
    throw f.error('linear_num_value_heads', `${linearValueHeads} is not a multiple of linear_num_key_heads ${linearKeyHeads}`);

  const numExperts = f.int('num_experts', 512);
  const topK = f.int('num_experts_per_tok', 10);
  if (topK > numExperts) throw f.error('num_experts_per_tok', `${topK} exceeds num_experts ${numExperts}`);

  // HF sorts and dedups the 1-based ids; the hash seeds follow that order
  const pleIds = [...new Set(f.intList('ple_layer_ids') ?? [])].sort((a, b) => a - b);
  for (const id of pleIds) if (id < 1 || id > numLayers) throw f.error('ple_layer_ids', `holds ${id}: ids are 1-based decoder layers in [1, ${numLayers}]`);
  const ngramSize = f.int('ngram_size', 3, 2);
  const headsPerNgram = f.int('heads_per_ngram', 8);
  const embedDim = f.int('ple_embed_dim', hiddenSize);
  const ngramHeads = (ngramSize - 1) * headsPerNgram;
  if (embedDim % ngramHeads !== 0) throw f.error('ple_embed_dim', `${embedDim} is not divisible by the ${ngramHeads} n-gram heads`);

  const config: ModelConfig = {
    name,
    hiddenSize,
    numLayers,
    fullAttentionInterval: intervalFromLayerTypes(f, numLayers),
    rmsNormEps: f.positive('rms_norm_eps', 1e-6),
    vocabSize,
    eosTokenId: eos,
    hc: { count: f.int('hc_count', 4, 2), lowRank: f.int('hc_lowrank', 320) },
    attention: { numHeads, numKvHeads, headDim, ropeDims: r.dims, ropeTheta: r.theta, indexer },
    linearAttention: {
      numKeyHeads: linearKeyHeads,
      numValueHeads: linearValueHeads,
      keyHeadDim: f.int('linear_key_head_dim', 128),
      valueHeadDim: f.int('linear_value_head_dim', 128),
      convKernel: f.int('linear_conv_kernel_dim', 4),
    },
    moe: {
      numExperts,
      topK,
      intermediate: f.int('moe_intermediate_size', 512),
      sharedIntermediate: f.int('shared_expert_intermediate_size', 512),
      normTopkProb: f.bool('norm_topk_prob', true),
    },
    ple: {
      layerIds: pleIds.map((id) => id - 1),
      embedDim,
      convKernel: f.int('ple_conv_kernel_size', 4),
      ngramSize,
      headsPerNgram,
      ngramVocabSizeBase: f.int('ngram_vocab_size_base', 20_000_000),
      makeNgramVocabSizeDivisibleBy: f.int('make_ngram_vocab_size_divisible_by', 128),
      seed: f.int('seed', 1234, 0),
      splitNgramParts: f.int('split_ngram_parts', 512),
    },
    mtp: mtpPresent(f, r.theta),
  };
  try {
    return validateConfig(config);
  } catch (e) {
    throw new ConfigError(`${label}: ${(e as Error).message}`);
  }
}

/**
 * layer_types as HF's Qwen4ExpTextConfig derives them when absent (__post_init__): linear_attention,
 * else hybrid_indexed on a PLE layer and deepseek_sparse_attention on the others; 'release': the
 * published checkpoint's "full_attention" for every QSA layer (ATOM reads it; HF refuses it).
 */
export function hfLayerTypes(c: ModelConfig, names: 'hf' | 'release' = 'hf'): string[] {
  return Array.from({ length: c.numLayers }, (_, i) => {
    if (layerKind(c, i) !== 'attention') return 'linear_attention';
    if (names === 'release') return 'full_attention';
    return c.ple.layerIds.includes(i) ? 'hybrid_indexed' : 'deepseek_sparse_attention';
  });
}

/** The HF text config (Qwen4ExpTextConfig form, every field written) of a ModelConfig; `names`: hfLayerTypes. */
export function hfTextConfigJson(c: ModelConfig, names: 'hf' | 'release' = 'hf'): Json {
  const a = c.attention;
  const factor = a.ropeDims / a.headDim;
  if (Math.trunc(a.headDim * factor) !== a.ropeDims)
    throw new ConfigError(`config '${c.name}': ${a.ropeDims} rotary dims of ${a.headDim} have no exact partial_rotary_factor`);
  return {
    architectures: ['Qwen4ExpForCausalLM'],
    model_type: 'qwen4_exp_text',
    dtype: 'bfloat16',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    layer_types: hfLayerTypes(c, names),
    rms_norm_eps: c.rmsNormEps,
    vocab_size: c.vocabSize,
    eos_token_id: c.eosTokenId,
    tie_word_embeddings: false,
    hidden_act: 'silu',
    output_gate_type: 'sigmoid',
    hc_count: c.hc.count,
    hc_lowrank: c.hc.lowRank,
    num_attention_heads: a.numHeads,
    num_key_value_heads: a.numKvHeads,
    head_dim: a.headDim,
    attention_bias: false,
    rope_parameters: { rope_type: 'default', rope_theta: a.ropeTheta, partial_rotary_factor: factor },
    indexer_n_heads: a.indexer.nHeads,
    indexer_kv_heads: a.indexer.kvHeads,
    indexer_head_dim: a.indexer.headDim,
    indexer_budget: a.indexer.budget,
    indexer_compress_ratio: a.indexer.compressRatio,
    linear_num_key_heads: c.linearAttention.numKeyHeads,
    linear_num_value_heads: c.linearAttention.numValueHeads,
    linear_key_head_dim: c.linearAttention.keyHeadDim,
    linear_value_head_dim: c.linearAttention.valueHeadDim,
    linear_conv_kernel_dim: c.linearAttention.convKernel,
    num_experts: c.moe.numExperts,
    num_experts_per_tok: c.moe.topK,
    moe_intermediate_size: c.moe.intermediate,
    shared_expert_intermediate_size: c.moe.sharedIntermediate,
    norm_topk_prob: c.moe.normTopkProb,
    ple_layer_ids: c.ple.layerIds.map((i) => i + 1),
    ple_embed_dim: c.ple.embedDim,
    ple_conv_kernel_size: c.ple.convKernel,
    ngram_size: c.ple.ngramSize,
    heads_per_ngram: c.ple.headsPerNgram,
    ngram_vocab_size_base: c.ple.ngramVocabSizeBase,
    make_ngram_vocab_size_divisible_by: c.ple.makeNgramVocabSizeDivisibleBy,
    seed: c.ple.seed,
    split_ngram_parts: c.ple.splitNgramParts,
    mtp_num_hidden_layers: c.mtp ? 1 : 0,
    mtp_use_dedicated_embeddings: false,
    ...(c.mtp ? { mtp: { layer_types: ['full_attention'] } } : {}),
  };
}

/** A config.json file's parsed content (a regular file, size-limited), errors naming the file. */
export function readJsonFile(path: string): unknown {
  try {
    return readJsonInput(path, JSON_LIMITS.config);
  } catch (e) {
    throw e instanceof JsonInputError ? new ConfigError(e.message) : e;
  }
}

/**
 * `--config`: a preset name (flash-next, small, tiny; a preset wins over a same-named
 * path), a config.json file, or a model folder holding config.json.
 */
export function resolveModelConfig(arg: string): ModelConfig {
  if (Object.hasOwn(PRESETS, arg)) return getConfig(arg);
  let isDir: boolean;
  try {
    isDir = statSync(arg).isDirectory();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new ConfigError(`unknown config '${arg}': not a preset (${Object.keys(PRESETS).join(', ')}), a config.json file or a model folder`);
    throw new ConfigError(`${arg}: ${errnoReason(e)}`);
  }
  const file = isDir ? join(arg, 'config.json') : arg;
  if (isDir && lstatOrNull(file) === null) throw new ConfigError(`${arg}: the model folder has no config.json`);
  return parseHfConfig(readJsonFile(file), file, arg);
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
