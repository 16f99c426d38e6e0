// `hcsp weights --layout ptpc-fp8`: the seeded synthetic weights in the layout of the
// Qwen3.8-Flash-Next-PTPC-FP8 release (docs/ptpc-fp8-release.md, where each fact's source
// is named): the multimodal form (text config under text_config, tensors under
// model.language_model.), routed experts one tensor per expert and projection, and
//   FP8 e4m3fn `X.weight` [N, K] + F32 `X.weight_scale` [N, 1], one scale per output
//   channel, for every linear ATOM's qwen4_exp builds with the quant_config and does not
//   force to bf16: routed and shared experts, attention q/k/v/o, GDN out_proj, the PLE's
//   key/value projections (MTP's layer alike);
//   the PLE table's shards FP8 with one global F32 `weight_scale` [1] (ATOM
//   _Qwen4ExpFP8Embedding);
//   everything else bf16, and listed in quantization_config.modules_to_not_convert.
// Per-channel quantization is ATOM's canonical PTPC quantizer (quant_weight_online with
// per_Token -> aiter per_token_quant_hip over W's rows): s[o] = fl(amax * fl(1/448)) (1 for
// a zero row), q = cvt(fl(w * fl(1/s[o]))), cvt rounding to nearest even and saturating
// (numerics/quant.ts 'reciprocal'). The table: s = fl(amax / 448) over the whole table,
// q = cvt(fl(w / bf(s))), as the fp8-release layout writes it. hfCheckpoint.ts reads them
// back as bf(fl(q * s[o])) and bf(q * bf(s)).
import { PRODUCTION_QUANT_STYLE, quantizeBf16RowsFp8, type SyntheticWeightSource, type Tensor, type WeightSpec } from '@hcsp/core';
import { fp8ReleaseGroups, multimodalName, type TensorGroup } from './fp8ReleaseGroups.ts';

// model names of the 2-D linears written FP8 with per-channel scales
const PER_CHANNEL: readonly RegExp[] = [
  /\.mlp\.shared_expert\.(gate|up|down)_proj\.weight$/,
  /\.self_attn\.(q|k|v|o)_proj\.weight$/,
  /\.linear_attn\.out_proj\.weight$/,
  /\.ple\.(key|value)_proj\.weight$/,
];

// the bf16 linears, as fnmatch patterns over the release's names (ATOM's exclusion match)
const NOT_CONVERTED = [
  'lm_head',
  'model.language_model.embed_tokens',
  '*.mlp.gate',
  '*.mlp.shared_expert_gate',
  '*.linear_attn.in_proj_qkv',
  '*.linear_attn.in_proj_z',
  '*.linear_attn.in_proj_a',
  '*.linear_attn.in_proj_b',
  '*.linear_attn.conv1d',
  '*.self_attn.indexer.index_qk_proj',
  '*hyper_connection*',
  'mtp.fc_embedding',
  'mtp.fc_hidden',
];

/** One bf16 matrix [rows, cols] as FP8 e4m3fn + F32 [rows, 1] per-channel scales, under `base`. */
function perChannel(base: string, w: Uint16Array, rows: number, cols: number): [string, Tensor][] {
  const { q, scale } = quantizeBf16RowsFp8(w, rows, cols, 'e4m3fn', PRODUCTION_QUANT_STYLE.separate);
  return [
    [`${base}.weight`, { dtype: 'fp8e4m3fn', shape: [rows, cols], data: q }],
    [`${base}.weight_scale`, { dtype: 'f32', shape: [rows, 1], data: scale }],
  ];
}

export function ptpcFp8Groups(specs: readonly WeightSpec[], w: SyntheticWeightSource): TensorGroup[] {
  return fp8ReleaseGroups(specs, w, {
    expertPart: perChannel,
    expertPartBytes: (rows, cols) => rows * cols + rows * 4,
    other: (spec) => {
      if (spec.shape.length !== 2 || !PER_CHANNEL.some((re) => re.test(spec.name))) return null;
      const [rows, cols] = spec.shape;
      return {
        bytes: rows * cols + rows * 4,
        make: () => perChannel(multimodalName(spec.name.replace(/\.weight$/, '')), w.tensor(spec.name).data as Uint16Array, rows, cols),
      };
    },
  });
}

/** config.json of the release: the text config under text_config and the PTPC quantization_config. */
export function ptpcFp8ConfigJson(text: Record<string, unknown>): unknown {
  const { architectures: _, ...inner } = text;
  return {
    architectures: ['Qwen4ExpForConditionalGeneration'],
    model_type: 'qwen4_exp',
    tie_word_embeddings: false,
    // fp8 without weight_block_size and with dynamic activations is ATOM's per_Token
    // (PTPC) policy (atom/quant_spec.py GenericParser); the FP8 PLE table needs quant_method fp8
    quantization_config: { quant_method: 'fp8', fmt: 'e4m3', activation_scheme: 'dynamic', modules_to_not_convert: NOT_CONVERTED },
    text_config: inner,
  };
}
