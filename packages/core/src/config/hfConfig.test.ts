import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { hfTextConfigJson, parseHfConfig, resolveModelConfig } from './hfConfig.ts';
import { FLASH_NEXT, PRESETS, SMALL } from './presets.ts';

// The Flash-Next text config as save_pretrained writes it: only the fields that differ from
// Qwen4ExpTextConfig's defaults (configuration_qwen4_exp.py), plus those whose default is
// None. Written by hand from model.md's table and the HF defaults, not from the code.
const FLASH_NEXT_DIFF = {
  model_type: 'qwen4_exp_text',
  hidden_size: 2560,
  num_hidden_layers: 48,
  num_attention_heads: 24,
  linear_num_value_heads: 48,
  moe_intermediate_size: 640,
  shared_expert_intermediate_size: 640,
  ple_layer_ids: [2],
  split_ngram_parts: 128,
  eos_token_id: 248044,
  indexer_n_heads: 4,
  indexer_kv_heads: 1,
  indexer_head_dim: 128,
  indexer_budget: 2048,
  indexer_compress_ratio: 4,
  rope_parameters: { rope_type: 'default', rope_theta: 10_000_000, partial_rotary_factor: 0.25, mrope_section: [11, 11, 10], mrope_interleaved: true },
  output_gate_type: 'sigmoid',
  mtp_num_hidden_layers: 1,
};

const dir = mkdtempSync(join(tmpdir(), 'hcsp-hfconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseHfConfig', () => {
  it('reads the Flash-Next diff config, absent fields taking HF defaults', () => {
    expect(parseHfConfig(FLASH_NEXT_DIFF, 'config.json', 'flash-next')).toEqual(FLASH_NEXT);
  });

  it('reads the text config under text_config, with the layer pattern from layer_types', () => {
    const layerTypes = Array.from({ length: 48 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention'));
    const nested = {
      model_type: 'qwen4_exp',
      architectures: ['Qwen4ExpForConditionalGeneration'],
      text_config: { ...FLASH_NEXT_DIFF, layer_types: layerTypes },
    };
    expect(parseHfConfig(nested, 'config.json', 'flash-next')).toEqual(FLASH_NEXT);
    // HF's and ATOM's other names for the QSA layers, and the interval HF pops from kwargs
    const hfNames = layerTypes.map((t, i) => (t === 'linear_attention' ? t : i === 3 ? 'hybrid_indexed' : 'deepseek_sparse_attention'));
    expect(parseHfConfig({ ...FLASH_NEXT_DIFF, layer_types: hfNames }, 'c').fullAttentionInterval).toBe(4);
    const every3 = {
      ...FLASH_NEXT_DIFF,
      num_hidden_layers: 6,
      layer_types: ['linear_attention', 'linear_attention', 'qwen_sparse_attention', 'linear_attention', 'linear_attention', 'full_attention'],
    };
    expect(parseHfConfig(every3, 'c').fullAttentionInterval).toBe(3);
    expect(parseHfConfig({ ...FLASH_NEXT_DIFF, full_attention_interval: 2 }, 'c').fullAttentionInterval).toBe(2);
  });

  it('takes the first eos of a list, sorts and dedups ple_layer_ids, reads legacy rope fields', () => {
    const { rope_parameters: _, ...noRope } = FLASH_NEXT_DIFF;
    const c = parseHfConfig({ ...noRope, rope_theta: 1e6, partial_rotary_factor: 0.5, eos_token_id: [7, 248044], ple_layer_ids: [5, 2, 5] }, 'c');
    expect(c.eosTokenId).toBe(7);
    expect(c.ple.layerIds).toEqual([1, 4]);
    expect(c.attention.ropeTheta).toBe(1e6);
    expect(c.attention.ropeDims).toBe(128);
    expect(parseHfConfig({ ...FLASH_NEXT_DIFF, mtp_num_hidden_layers: 0 }, 'c').mtp).toBe(false);
    const { mtp_num_hidden_layers: __, ...noMtpField } = FLASH_NEXT_DIFF;
    expect(parseHfConfig(noMtpField, 'c').mtp).toBe(false);
    expect(parseHfConfig({ ...noMtpField, mtp: { layer_types: ['full_attention'], rope_theta: 1e7 } }, 'c').mtp).toBe(true);
  });

  it('round-trips every preset through the HF form it writes', () => {
    for (const [name, preset] of Object.entries(PRESETS)) {
      const json = JSON.parse(JSON.stringify(hfTextConfigJson(preset)));
      expect(parseHfConfig(json, 'c', name)).toEqual(preset);
      expect(parseHfConfig({ model_type: 'qwen4_exp', text_config: json }, 'c', name)).toEqual(preset);
    }
  });

  // Each case breaks one field of the Flash-Next diff config; the error must name that field.
  const withTypes = (types: string[]) => ({ ...FLASH_NEXT_DIFF, num_hidden_layers: types.length, layer_types: types });
  const cases: [string, unknown, RegExp][] = [
    ['not an object', [1], /c: the config is not a JSON object/],
    [
      'unknown layer type',
      withTypes(['linear_attention', 'mamba', 'linear_attention', 'full_attention']),
      /field 'layer_types\[1\]' is "mamba", not a known layer type/,
    ],
    ['layer_types length', { ...FLASH_NEXT_DIFF, layer_types: ['linear_attention'] }, /field 'layer_types' has 1 entries for num_hidden_layers 48/],
    [
      'irregular layer pattern',
      withTypes(['linear_attention', 'full_attention', 'full_attention', 'linear_attention']),
      /field 'layer_types' is not one full-attention layer every 2 layers \(layer 2 is full_attention\)/,
    ],
    ['silu output gate', { ...FLASH_NEXT_DIFF, output_gate_type: 'silu' }, /field 'output_gate_type' is 'silu': hcsp implements the sigmoid output gate/],
    [
      'absent output gate',
      { ...FLASH_NEXT_DIFF, output_gate_type: undefined },
      /field 'output_gate_type' is 'silu' \(absent: HF falls back to hidden_act 'silu'\)/,
    ],
    ['hidden_act', { ...FLASH_NEXT_DIFF, hidden_act: 'gelu' }, /field 'hidden_act' is 'gelu'/],
    ['kv heads', { ...FLASH_NEXT_DIFF, num_key_value_heads: 5 }, /field 'num_key_value_heads' 5 does not divide num_attention_heads 24/],
    ['linear heads', { ...FLASH_NEXT_DIFF, linear_num_value_heads: 40 }, /field 'linear_num_value_heads' 40 is not a multiple of linear_num_key_heads 16/],
    ['string size', { ...FLASH_NEXT_DIFF, hidden_size: '2560' }, /field 'hidden_size' must be an integer >= 1, got "2560"/],
    ['zero layers', { ...FLASH_NEXT_DIFF, num_hidden_layers: 0 }, /field 'num_hidden_layers' must be an integer >= 1, got 0/],
    ['fractional head dim', { ...FLASH_NEXT_DIFF, head_dim: 25.5 }, /field 'head_dim' must be an integer >= 1/],
    ['hc_count', { ...FLASH_NEXT_DIFF, hc_count: 1 }, /field 'hc_count' must be an integer >= 2, got 1/],
    ['eps', { ...FLASH_NEXT_DIFF, rms_norm_eps: -1 }, /field 'rms_norm_eps' must be a positive number/],
    ['no eos', { ...FLASH_NEXT_DIFF, eos_token_id: undefined }, /field 'eos_token_id' is missing/],
    ['eos range', { ...FLASH_NEXT_DIFF, eos_token_id: 248320 }, /field 'eos_token_id' must be a token id in \[0, vocab_size 248320\)/],
    ['no indexer', { ...FLASH_NEXT_DIFF, indexer_n_heads: undefined }, /field 'indexer_n_heads' is missing/],
    ['indexer kv', { ...FLASH_NEXT_DIFF, indexer_kv_heads: 2 }, /field 'indexer_kv_heads' is 2: Qwen4-Exp QSA requires one indexer key head/],
    ['indexer budget', { ...FLASH_NEXT_DIFF, indexer_budget: 2050 }, /field 'indexer_budget' 2050 is not a multiple of indexer_compress_ratio 4/],
    ['indexer dims', { ...FLASH_NEXT_DIFF, indexer_head_dim: 32 }, /field 'indexer_head_dim' 32 is smaller than the 64 rotary dims/],
    ['no theta', { ...FLASH_NEXT_DIFF, rope_parameters: { partial_rotary_factor: 0.25 } }, /field 'rope_parameters.rope_theta' is missing/],
    [
      'rope type',
      { ...FLASH_NEXT_DIFF, rope_parameters: { ...FLASH_NEXT_DIFF.rope_parameters, rope_type: 'yarn' } },
      /field 'rope_parameters.rope_type' is 'yarn'/,
    ],
    [
      'odd rotary dims',
      { ...FLASH_NEXT_DIFF, rope_parameters: { rope_theta: 1e7, partial_rotary_factor: 0.6 } },
      /field 'rope_parameters.partial_rotary_factor' 0.6 gives 153 rotary dims/,
    ],
    ['ple id 0', { ...FLASH_NEXT_DIFF, ple_layer_ids: [0] }, /field 'ple_layer_ids' holds 0: ids are 1-based decoder layers in \[1, 48\]/],
    ['ple id past the end', { ...FLASH_NEXT_DIFF, ple_layer_ids: [49] }, /field 'ple_layer_ids' holds 49/],
    ['ple dim', { ...FLASH_NEXT_DIFF, ple_embed_dim: 2561 }, /field 'ple_embed_dim' 2561 is not divisible by the 16 n-gram heads/],
    ['ngram size', { ...FLASH_NEXT_DIFF, ngram_size: 1 }, /field 'ngram_size' must be an integer >= 2/],
    ['top k', { ...FLASH_NEXT_DIFF, num_experts_per_tok: 600 }, /field 'num_experts_per_tok' 600 exceeds num_experts 512/],
    ['norm_topk_prob', { ...FLASH_NEXT_DIFF, norm_topk_prob: 'yes' }, /field 'norm_topk_prob' must be true or false/],
    ['tied head', { ...FLASH_NEXT_DIFF, tie_word_embeddings: true }, /field 'tie_word_embeddings' is true/],
    ['dtype', { ...FLASH_NEXT_DIFF, dtype: 'float16' }, /field 'dtype' is 'float16': the model runs in bfloat16/],
    ['attention bias', { ...FLASH_NEXT_DIFF, attention_bias: true }, /field 'attention_bias' is true/],
    ['model type', { ...FLASH_NEXT_DIFF, model_type: 'llama' }, /field 'model_type' is 'llama', not a Qwen4-Exp model/],
    ['no text_config', { model_type: 'qwen4_exp' }, /field 'text_config' is missing/],
    [
      'text model type',
      { model_type: 'qwen4_exp', text_config: { ...FLASH_NEXT_DIFF, model_type: 'qwen3_next' } },
      /field 'text_config.model_type' is 'qwen3_next'/,
    ],
    [
      'nested field',
      { model_type: 'qwen4_exp', text_config: { ...FLASH_NEXT_DIFF, hidden_size: -3 } },
      /field 'text_config.hidden_size' must be an integer >= 1, got -3/,
    ],
    ['nested tie', { model_type: 'qwen4_exp', tie_word_embeddings: true, text_config: FLASH_NEXT_DIFF }, /field 'tie_word_embeddings' is true/],
    ['mtp layers', { ...FLASH_NEXT_DIFF, mtp_num_hidden_layers: 2 }, /field 'mtp_num_hidden_layers' is 2: the MTP head has one draft layer/],
    ['mtp embeddings', { ...FLASH_NEXT_DIFF, mtp_use_dedicated_embeddings: true }, /field 'mtp_use_dedicated_embeddings' is true/],
    ['mtp layer type', { ...FLASH_NEXT_DIFF, mtp: { layer_types: ['linear_attention'] } }, /field 'mtp.layer_types' is \["linear_attention"\]/],
    ['mtp theta', { ...FLASH_NEXT_DIFF, mtp: { rope_theta: 1e6 } }, /field 'mtp.rope_theta' is 1000000, not the model's 10000000/],
  ];
  for (const [what, json, want] of cases) {
    it(`refuses ${what}, naming the field`, () => {
      expect(() => parseHfConfig(JSON.parse(JSON.stringify(json)), 'c')).toThrow(want);
    });
  }
});

describe('resolveModelConfig', () => {
  it('takes a preset name, a config.json path or a model folder', () => {
    expect(resolveModelConfig('small')).toEqual(SMALL);
    const folder = join(dir, 'model');
    mkdirSync(folder);
    writeFileSync(join(folder, 'config.json'), JSON.stringify(hfTextConfigJson(SMALL)));
    expect(resolveModelConfig(folder)).toEqual({ ...SMALL, name: folder });
    expect(resolveModelConfig(join(folder, 'config.json'))).toEqual({ ...SMALL, name: join(folder, 'config.json') });
  });

  it('says what is wrong with a bad argument, naming the path', () => {
    expect(() => resolveModelConfig(join(dir, 'nope'))).toThrow(
      /unknown config '.*nope': not a preset \(flash-next, small, tiny\), a config.json file or a model folder/,
    );
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(() => resolveModelConfig(empty)).toThrow(/empty: the model folder has no config.json/);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"hidden_size": ');
    expect(() => resolveModelConfig(bad)).toThrow(/bad.json: not valid JSON/);
    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ ...hfTextConfigJson(SMALL), num_key_value_heads: 3 }));
    expect(() => resolveModelConfig(wrong)).toThrow(/wrong.json: field 'num_key_value_heads' 3 does not divide num_attention_heads 8/);
  });
});
