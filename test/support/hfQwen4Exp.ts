// What Hugging Face transformers accepts as a Qwen4-Exp text model folder, written down from
// its source (huggingface/transformers, src/transformers/models/qwen4_exp/, read at
// configuration_qwen4_exp.py 075d0aed7764672dcac6e9c87348ae4e563ff4f1 and
// modeling_qwen4_exp.py 381161e9b75f0a4db5ab433fc0e991161f75c4e2), independently of hcsp's
// own config and weight code, so that tests can hold what `hcsp weights --layout hf` writes
// against it without PyTorch:
//  - hfConfigProblems: what `Qwen4ExpTextConfig(**config_json)` refuses: the @strict
//    dataclass field types (huggingface_hub's type validator: isinstance, so a float field
//    takes no JSON integer), the __post_init__ defaults and validate_architecture;
//  - hfCheckpointTensors: the state dict `Qwen4ExpForCausalLM` loads from a folder, as
//    save_pretrained writes it (the PLE table as `split_ngram_parts` row chunks, torch.chunk).
// The other stored version of the configuration (626859fc...: layer types linear_attention and
// qwen_sparse_attention only, "full_attention" renamed on load, PLE on linear layers only) is
// not this one. PreTrainedConfig.validate_layer_type (configuration_utils.py) also wants one
// entry per layer; its ALLOWED_LAYER_TYPES as stored (008e5743...) has deepseek_sparse_attention
// and linear_attention but not hybrid_indexed (nor qwen_sparse_attention): that list is not
// checked here, the model's own validate_architecture is.

type Json = Record<string, unknown>;

/** Python's type of a JSON value as json.loads makes it: an integer literal is an int, a literal with a fraction or an exponent a float. */
type PyKind = 'int' | 'float' | 'bool' | 'str' | 'list' | 'dict' | 'None';

// Qwen4ExpTextConfig's annotated fields and their defaults (the dataclass body).
const FIELDS: Record<string, { type: string; default: unknown }> = {
  vocab_size: { type: 'int', default: 248320 },
  hidden_size: { type: 'int', default: 2048 },
  num_hidden_layers: { type: 'int', default: 40 },
  num_attention_heads: { type: 'int', default: 16 },
  num_key_value_heads: { type: 'int', default: 2 },
  hidden_act: { type: 'str', default: 'silu' },
  max_position_embeddings: { type: 'int', default: 32768 },
  initializer_range: { type: 'float', default: 0.02 },
  rms_norm_eps: { type: 'float', default: 1e-6 },
  use_cache: { type: 'bool', default: true },
  tie_word_embeddings: { type: 'bool', default: false },
  rope_parameters: { type: 'dict|None', default: null },
  attention_bias: { type: 'bool', default: false },
  attention_dropout: { type: 'float|int', default: 0.0 },
  head_dim: { type: 'int', default: 256 },
  linear_conv_kernel_dim: { type: 'int', default: 4 },
  linear_key_head_dim: { type: 'int', default: 128 },
  linear_value_head_dim: { type: 'int', default: 128 },
  linear_num_key_heads: { type: 'int', default: 16 },
  linear_num_value_heads: { type: 'int', default: 32 },
  moe_intermediate_size: { type: 'int', default: 512 },
  shared_expert_intermediate_size: { type: 'int', default: 512 },
  num_experts_per_tok: { type: 'int', default: 10 },
  num_experts: { type: 'int', default: 512 },
  output_router_logits: { type: 'bool', default: false },
  router_aux_loss_coef: { type: 'float', default: 0.001 },
  layer_types: { type: 'list[str]|None', default: null },
  pad_token_id: { type: 'int|None', default: null },
  bos_token_id: { type: 'int|None', default: null },
  eos_token_id: { type: 'int|list[int]|None', default: null },
  hc_count: { type: 'int', default: 4 },
  hc_lowrank: { type: 'int', default: 320 },
  ple_layer_ids: { type: 'list[int]|None', default: null },
  ple_embed_dim: { type: 'int|None', default: null },
  ple_conv_kernel_size: { type: 'int', default: 4 },
  ngram_size: { type: 'int', default: 3 },
  heads_per_ngram: { type: 'int', default: 8 },
  ngram_vocab_size_base: { type: 'int', default: 20_000_000 },
  make_ngram_vocab_size_divisible_by: { type: 'int', default: 128 },
  seed: { type: 'int', default: 1234 },
  split_ngram_parts: { type: 'int', default: 512 },
  indexer_n_heads: { type: 'int|None', default: null },
  indexer_kv_heads: { type: 'int|None', default: null },
  indexer_head_dim: { type: 'int|None', default: null },
  indexer_budget: { type: 'int|None', default: null },
  indexer_compress_ratio: { type: 'int|None', default: null },
  norm_topk_prob: { type: 'bool', default: true },
  output_gate_type: { type: 'str|None', default: null },
};

/** validate_architecture's set: "Unsupported Qwen4-Exp layer types" for any other name (no rename of "full_attention" in this version). */
export const HF_LAYER_TYPES = ['linear_attention', 'hybrid_indexed', 'deepseek_sparse_attention'] as const;

/** The Python kind of each top-level value of a JSON object text (numbers by their literal). */
function pythonKinds(text: string, json: Json): Record<string, PyKind> {
  const out: Record<string, PyKind> = {};
  for (const [k, v] of Object.entries(json)) {
    if (v === null) out[k] = 'None';
    else if (typeof v === 'boolean') out[k] = 'bool';
    else if (typeof v === 'string') out[k] = 'str';
    else if (Array.isArray(v)) out[k] = 'list';
    else if (typeof v === 'object') out[k] = 'dict';
    else {
      // the literal as written: JSON.stringify escapes no key characters the names here use
      const m = new RegExp(`"${k}"\\s*:\\s*(-?[0-9][0-9.eE+-]*)`).exec(text);
      if (!m) throw new Error(`hfConfigProblems: no number literal for '${k}' in the text`);
      out[k] = /[.eE]/.test(m[1]) ? 'float' : 'int';
    }
  }
  return out;
}

/** isinstance as the strict validator checks it (bool is an int in Python). */
function typeOk(type: string, kind: PyKind, value: unknown): boolean {
  return type.split('|').some((t) => {
    if (t === 'None') return kind === 'None';
    if (t === 'int') return kind === 'int' || kind === 'bool';
    if (t === 'float') return kind === 'float';
    if (t === 'bool') return kind === 'bool';
    if (t === 'str') return kind === 'str';
    if (t === 'dict') return kind === 'dict';
    if (t === 'list[str]') return kind === 'list' && (value as unknown[]).every((x) => typeof x === 'string');
    if (t === 'list[int]') return kind === 'list' && (value as unknown[]).every((x) => typeof x === 'number' && Number.isInteger(x));
    throw new Error(`hfConfigProblems: type '${t}'`);
  });
}

/** The config after __post_init__ (defaults applied), as validate_architecture and the modules see it. */
export function hfEffectiveConfig(text: string): Json {
  const json = JSON.parse(text) as Json;
  const c: Json = {};
  for (const [k, f] of Object.entries(FIELDS)) c[k] = json[k] ?? f.default;
  c.ple_layer_ids = [...new Set((c.ple_layer_ids as number[] | null) ?? [])].sort((a, b) => a - b);
  if (c.ple_embed_dim === null) c.ple_embed_dim = c.hidden_size;
  if (c.layer_types === null) {
    const interval = (json.full_attention_interval as number | undefined) ?? 4;
    c.layer_types = Array.from({ length: c.num_hidden_layers as number }, (_, i) =>
      (i + 1) % interval ? 'linear_attention' : (c.ple_layer_ids as number[]).includes(i + 1) ? 'hybrid_indexed' : 'deepseek_sparse_attention',
    );
  }
  return c;
}

/**
 * What `Qwen4ExpTextConfig(**json.loads(text))` raises, one line each (empty: it accepts the
 * config). `text` is the config.json text: the type of a number is its literal's.
 */
export function hfConfigProblems(text: string): string[] {
  const json = JSON.parse(text) as Json;
  const problems: string[] = [];
  if (json.model_type !== 'qwen4_exp_text') problems.push(`model_type ${JSON.stringify(json.model_type)}: Qwen4ExpTextConfig.model_type is qwen4_exp_text`);
  const kinds = pythonKinds(text, json);
  for (const [k, f] of Object.entries(FIELDS)) {
    if (k in json && !typeOk(f.type, kinds[k], json[k]))
      problems.push(`${k}: expected ${f.type}, got ${kinds[k]} ${JSON.stringify(json[k])} (strict dataclass type check)`);
  }
  if (problems.length > 0) return problems;
  const c = hfEffectiveConfig(text);
  const n = (k: string) => c[k] as number;
  const layerTypes = c.layer_types as string[];
  const unsupported = [...new Set(layerTypes.filter((t) => !(HF_LAYER_TYPES as readonly string[]).includes(t)))].sort();
  if (unsupported.length) problems.push(`Unsupported Qwen4-Exp layer types: ${JSON.stringify(unsupported)}`);
  // PreTrainedConfig.validate_layer_type (configuration_utils.py)
  if (layerTypes.length !== n('num_hidden_layers'))
    problems.push(`num_hidden_layers (${n('num_hidden_layers')}) must be equal to the number of layer_types (${layerTypes.length})`);
  const gate = (c.output_gate_type as string | null) ?? (c.hidden_act as string);
  if (!['sigmoid', 'silu'].includes(gate)) problems.push(`Unsupported Qwen4-Exp output gate activation: ${gate}`);
  if (n('hc_count') <= 1) problems.push(`Qwen4-Exp requires hc_count > 1, got ${n('hc_count')}`);
  if (n('num_experts') <= 0) problems.push(`num_experts must be > 0, got ${n('num_experts')}`);
  if (!(n('num_experts_per_tok') > 0 && n('num_experts_per_tok') <= n('num_experts'))) problems.push('num_experts_per_tok must be in [1, num_experts]');
  if (n('moe_intermediate_size') <= 0 || n('shared_expert_intermediate_size') <= 0)
    problems.push('moe_intermediate_size and shared_expert_intermediate_size must be > 0');
  const qsa = ['indexer_n_heads', 'indexer_kv_heads', 'indexer_head_dim', 'indexer_budget', 'indexer_compress_ratio'];
  if (qsa.some((k) => c[k] !== null)) {
    const missing = qsa.filter((k) => c[k] === null);
    if (missing.length) problems.push(`QSA config is missing required fields: ${missing.join(', ')}`);
    else if (qsa.some((k) => n(k) <= 0)) problems.push('QSA config values must be positive');
    else {
      if (n('indexer_kv_heads') !== 1) problems.push('Qwen4-Exp QSA requires indexer_kv_heads=1');
      if (n('indexer_budget') % n('indexer_compress_ratio') !== 0) problems.push('indexer_budget must be divisible by indexer_compress_ratio');
    }
  }
  const ple = c.ple_layer_ids as number[];
  if (ple.length) {
    const heads = (n('ngram_size') - 1) * n('heads_per_ngram');
    if (heads <= 0 || n('ple_embed_dim') <= 0 || n('ple_embed_dim') % heads !== 0)
      problems.push(`ple_embed_dim ${n('ple_embed_dim')} is not divisible by the ${heads} n-gram heads`);
    const bad = ple.filter((id) => id < 1 || id > n('num_hidden_layers'));
    if (bad.length) problems.push(`ple_layer_ids must contain one-indexed ids in [1, ${n('num_hidden_layers')}], got ${JSON.stringify(bad)}`);
    const eos = c.eos_token_id;
    if (eos === null || (Array.isArray(eos) && eos.length === 0)) problems.push('eos_token_id must be set when Qwen4-Exp PLE layers are enabled');
  }
  // outside the QSA block in this version: a config without indexer_head_dim fails here (TypeError)
  const factor = ((c.rope_parameters as Json | null)?.partial_rotary_factor as number | undefined) ?? 1;
  const rotary = Math.trunc(n('head_dim') * factor);
  if (c.indexer_head_dim === null) problems.push('indexer_head_dim is None: the rotary_dim check compares with it (TypeError)');
  else if (rotary > n('indexer_head_dim'))
    problems.push(`Qwen4-Exp attention RoPE dimensions must fit the QSA index head: rotary_dim=${rotary}, indexer_head_dim=${n('indexer_head_dim')}`);
  return problems;
}

export interface HfTensor {
  dtype: 'BF16' | 'I64';
  shape: number[];
  /** the values of an I64 buffer */
  values?: bigint[];
}

const MASK64 = (1n << 64n) - 1n;
const GAMMA = 0x9e3779b97f4a7c15n;

// _splitmix64 and _build_layer_multipliers, in Python's unbounded ints masked to 64 bits
function splitmix64(value: bigint): bigint {
  let v = (value + GAMMA) & MASK64;
  v = ((v ^ (v >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  v = ((v ^ (v >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return (v ^ (v >> 31n)) & MASK64;
}

function layerMultipliers(vocab: number, ngramSize: number, pleIndex: number, seed: number): bigint[] {
  const maxLong = (1n << 63n) - 1n;
  const multiplierMax = maxLong / BigInt(Math.max(vocab, 1));
  const half = multiplierMax / 2n > 1n ? multiplierMax / 2n : 1n;
  const base = BigInt(seed) + 10007n * BigInt(pleIndex);
  return Array.from({ length: ngramSize }, (_, i) => 2n * (splitmix64((base + GAMMA * BigInt(i + 1)) & MASK64) % half) + 1n);
}

function isPrime(v: number): boolean {
  if (v < 2) return false;
  if (v % 2 === 0) return v === 2;
  for (let d = 3; d * d <= v; d += 2) if (v % d === 0) return false;
  return true;
}

/** _find_nth_prime_after(start, count) */
function nthPrimeAfter(start: number, count: number): number {
  let p = start;
  for (let i = 0; i < count; i++) {
    p++;
    while (!isPrime(p)) p++;
  }
  return p;
}

/**
 * The tensors `Qwen4ExpForCausalLM.from_pretrained(folder)` loads with no missing key, by
 * checkpoint name (model dtype bf16; the PLE buffers int64), from the module constructors:
 * Qwen4ExpTextModel (embed_tokens, layers, hyper_connection_mixer without block_inject_weight;
 * rotary_emb.inv_freq is a non-persistent buffer), Qwen4ExpTextDecoderLayer (linear_attn or
 * self_attn, mlp, ple on ple_layer_ids, the two hyper-connections), lm_head. The n-gram table
 * `ngram_embedding.weight` [padded rows, ple_embed_dim / heads] is stored as
 * `ngram_embedding.shard_{k}.weight`, torch.chunk(weight, split_ngram_parts) (the HF test
 * test_ple_sharded_checkpoint_loads_and_forwards writes it so). `mtp.*` keys are ignored on
 * load (_keys_to_ignore_on_load_unexpected) and not listed.
 */
export function hfCheckpointTensors(configText: string): Map<string, HfTensor> {
  const c = hfEffectiveConfig(configText);
  const n = (k: string) => c[k] as number;
  const H = n('hidden_size');
  const hc = n('hc_count') * H;
  const out = new Map<string, HfTensor>();
  const bf = (name: string, ...shape: number[]) => out.set(name, { dtype: 'BF16', shape });
  const gatedResidual = (p: string, combine: boolean) => {
    bf(`${p}.hc_norm.weight`, hc);
    bf(`${p}.input_mix_weight_down.weight`, n('hc_lowrank'), hc);
    bf(`${p}.input_mix_weight_up.weight`, hc, n('hc_lowrank'));
    if (combine) bf(`${p}.block_inject_weight.weight`, n('hc_count'), hc);
  };
  bf('model.embed_tokens.weight', n('vocab_size'), H);
  const ple = c.ple_layer_ids as number[];
  const layerTypes = c.layer_types as string[];
  for (let i = 0; i < n('num_hidden_layers'); i++) {
    const p = `model.layers.${i}`;
    if (layerTypes[i] === 'linear_attention') {
      const keyDim = n('linear_key_head_dim') * n('linear_num_key_heads');
      const valueDim = n('linear_value_head_dim') * n('linear_num_value_heads');
      const convDim = 2 * keyDim + valueDim;
      const hv = n('linear_num_value_heads');
      bf(`${p}.linear_attn.conv1d.weight`, convDim, 1, n('linear_conv_kernel_dim'));
      bf(`${p}.linear_attn.dt_bias`, hv);
      bf(`${p}.linear_attn.A_log`, hv);
      bf(`${p}.linear_attn.norm.weight`, n('linear_value_head_dim'));
      bf(`${p}.linear_attn.out_proj.weight`, H, valueDim);
      bf(`${p}.linear_attn.in_proj_qkv.weight`, convDim, H);
      bf(`${p}.linear_attn.in_proj_z.weight`, valueDim, H);
      bf(`${p}.linear_attn.in_proj_b.weight`, hv, H);
      bf(`${p}.linear_attn.in_proj_a.weight`, hv, H);
    } else {
      const hd = n('head_dim');
      const dI = n('indexer_head_dim');
      bf(`${p}.self_attn.q_proj.weight`, n('num_attention_heads') * hd * 2, H);
      bf(`${p}.self_attn.k_proj.weight`, n('num_key_value_heads') * hd, H);
      bf(`${p}.self_attn.v_proj.weight`, n('num_key_value_heads') * hd, H);
      bf(`${p}.self_attn.o_proj.weight`, H, n('num_attention_heads') * hd);
      bf(`${p}.self_attn.q_norm.weight`, hd);
      bf(`${p}.self_attn.k_norm.weight`, hd);
      bf(`${p}.self_attn.indexer.index_qk_proj.weight`, (n('indexer_n_heads') + n('indexer_kv_heads')) * dI, H);
      bf(`${p}.self_attn.indexer.q_layernorm.weight`, dI);
      bf(`${p}.self_attn.indexer.k_layernorm.weight`, dI);
    }
    const E = n('num_experts');
    const I = n('moe_intermediate_size');
    const Is = n('shared_expert_intermediate_size');
    bf(`${p}.mlp.gate.weight`, E, H);
    bf(`${p}.mlp.experts.gate_up_proj`, E, 2 * I, H);
    bf(`${p}.mlp.experts.down_proj`, E, H, I);
    bf(`${p}.mlp.shared_expert.gate_proj.weight`, Is, H);
    bf(`${p}.mlp.shared_expert.up_proj.weight`, Is, H);
    bf(`${p}.mlp.shared_expert.down_proj.weight`, H, Is);
    bf(`${p}.mlp.shared_expert_gate.weight`, 1, H);
    const pleIndex = ple.indexOf(i + 1);
    if (pleIndex >= 0) {
      const D = n('ple_embed_dim');
      const heads = (n('ngram_size') - 1) * n('heads_per_ngram');
      const sizes: number[] = [];
      const offsets: number[] = [];
      let total = 0;
      for (let h = 0; h < heads; h++) {
        const size = nthPrimeAfter(n('ngram_vocab_size_base') - 1, pleIndex * heads + h + 1);
        sizes.push(size);
        offsets.push(total);
        total += size;
      }
      const div = n('make_ngram_vocab_size_divisible_by');
      const rows = Math.ceil(total / div) * div;
      const q = `${p}.ple.ple_embedding`;
      const buf = (name: string, values: bigint[]) => out.set(`${q}.${name}`, { dtype: 'I64', shape: [values.length], values });
      buf('layer_multipliers', layerMultipliers(n('vocab_size'), n('ngram_size'), pleIndex, n('seed')));
      buf('ngram_heads_vocab_sizes', sizes.map(BigInt));
      buf('ngram_heads_offsets', offsets.map(BigInt));
      const chunk = Math.ceil(rows / n('split_ngram_parts'));
      for (let k = 0; k * chunk < rows; k++) bf(`${q}.ngram_embedding.shard_${k}.weight`, Math.min(chunk, rows - k * chunk), D / heads);
      bf(`${p}.ple.key_proj.weight`, hc, D);
      bf(`${p}.ple.value_proj.weight`, H, D);
      bf(`${p}.ple.norm_key.weight`, hc);
      bf(`${p}.ple.norm_query.weight`, hc);
      bf(`${p}.ple.norm_conv.weight`, hc);
      bf(`${p}.ple.conv1d.weight`, hc, 1, n('ple_conv_kernel_size'));
    }
    gatedResidual(`${p}.attn_hyper_connection`, true);
    gatedResidual(`${p}.mlp_hyper_connection`, true);
  }
  gatedResidual('model.hyper_connection_mixer', false);
  bf('lm_head.weight', n('vocab_size'), H);
  return out;
}

/**
 * The config.json HF's save_pretrained writes for this config (to_diff_dict): the fields that
 * differ from the class defaults, with those __post_init__ set (layer_types, ple_layer_ids,
 * ple_embed_dim, number_of_conv_states), model_type, architectures, dtype, transformers_version,
 * and the keys the class does not declare (PreTrainedConfig keeps extra kwargs as attributes:
 * the MTP fields, for one).
 */
export function hfSavedConfig(configText: string): Json {
  const json = JSON.parse(configText) as Json;
  const c = hfEffectiveConfig(configText);
  const out: Json = { architectures: json.architectures, model_type: 'qwen4_exp_text', dtype: 'bfloat16', transformers_version: '5.0.0' };
  for (const [k, v] of Object.entries(json)) if (!(k in FIELDS) && !(k in out) && k !== 'full_attention_interval') out[k] = v;
  for (const [k, f] of Object.entries(FIELDS)) if (JSON.stringify(c[k]) !== JSON.stringify(f.default)) out[k] = c[k];
  out.number_of_conv_states = (c.ple_layer_ids as number[]).length ? 3 : 1;
  return out;
}
