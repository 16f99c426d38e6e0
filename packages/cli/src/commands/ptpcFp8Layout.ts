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
import { bf16ToF32, f32ToFp8, numel, PRODUCTION_QUANT_STYLE, quantizeBf16RowsFp8, roundBf16, type SyntheticWeightSource, type Tensor, type WeightSpec } from '@hcsp/core';

const E4M3FN_MAX = 448;

/** Tensors written together (one checkpoint spec's), made only when their shard is written. */
export interface TensorGroup {
  bytes: number;
  make(): [string, Tensor][];
}

// model names of the 2-D linears written FP8 with per-channel scales
const PER_CHANNEL: readonly RegExp[] = [/\.mlp\.shared_expert\.(gate|up|down)_proj\.weight$/, /\.self_attn\.(q|k|v|o)_proj\.weight$/, /\.linear_attn\.out_proj\.weight$/, /\.ple\.(key|value)_proj\.weight$/];

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

function releasedName(name: string): string {
  return name.startsWith('model.') ? `model.language_model.${name.slice('model.'.length)}` : name;
}

/** One bf16 matrix [rows, cols] as FP8 e4m3fn + F32 [rows, 1] per-channel scales, under `base`. */
function perChannel(base: string, w: Uint16Array, rows: number, cols: number): [string, Tensor][] {
  const { q, scale } = quantizeBf16RowsFp8(w, rows, cols, 'e4m3fn', PRODUCTION_QUANT_STYLE.separate);
  return [
    [`${base}.weight`, { dtype: 'fp8e4m3fn', shape: [rows, cols], data: q }],
    [`${base}.weight_scale`, { dtype: 'f32', shape: [rows, 1], data: scale }],
  ];
}

export function ptpcFp8Groups(specs: readonly WeightSpec[], w: SyntheticWeightSource): TensorGroup[] {
  const groups: TensorGroup[] = [];
  const tableScales = new Map<string, number>();
  const tableScale = (table: string): number => {
    let s = tableScales.get(table);
    if (s === undefined) {
      let amax = 0;
      for (const spec of specs) {
        if (!spec.name.startsWith(`${table}.shard_`)) continue;
        for (const v of w.tensor(spec.name).data as Uint16Array) amax = Math.max(amax, Math.abs(bf16ToF32(v)));
      }
      s = amax === 0 ? 1 : Math.fround(amax / E4M3FN_MAX);
      tableScales.set(table, s);
    }
    return s;
  };
  for (const spec of specs) {
    const experts = /^(.+\.mlp\.experts)\.(gate_up_proj|down_proj)$/.exec(spec.name);
    const shard = /^(.+\.ngram_embedding)\.shard_\d+\.weight$/.exec(spec.name);
    if (experts) {
      const [E, rows, cols] = spec.shape;
      const parts = experts[2] === 'gate_up_proj' ? ['gate_proj', 'up_proj'] : ['down_proj'];
      const partRows = rows / parts.length;
      groups.push({
        bytes: E * rows * cols + E * rows * 4,
        make: () => {
          const data = w.tensor(spec.name).data as Uint16Array;
          const out: [string, Tensor][] = [];
          for (let e = 0; e < E; e++) {
            parts.forEach((part, k) => {
              const start = (e * rows + k * partRows) * cols;
              out.push(...perChannel(releasedName(`${experts[1]}.${e}.${part}`), data.subarray(start, start + partRows * cols), partRows, cols));
            });
          }
          return out;
        },
      });
    } else if (shard) {
      const table = shard[1];
      groups.push({
        bytes: numel(spec.shape),
        make: () => {
          const s = roundBf16(tableScale(table));
          const data = Uint8Array.from(w.tensor(spec.name).data as Uint16Array, (v) => f32ToFp8(Math.fround(bf16ToF32(v) / s), 'e4m3fn'));
          const out: [string, Tensor][] = [[releasedName(spec.name), { dtype: 'fp8e4m3fn', shape: spec.shape, data }]];
          if (spec.name === `${table}.shard_0.weight`) out.push([releasedName(`${table}.weight_scale`), { dtype: 'f32', shape: [1], data: Float32Array.of(tableScale(table)) }]);
          return out;
        },
      });
    } else if (spec.shape.length === 2 && PER_CHANNEL.some((re) => re.test(spec.name))) {
      const [rows, cols] = spec.shape;
      groups.push({ bytes: rows * cols + rows * 4, make: () => perChannel(releasedName(spec.name.replace(/\.weight$/, '')), w.tensor(spec.name).data as Uint16Array, rows, cols) });
    } else {
      groups.push({ bytes: numel(spec.shape) * (spec.dtype === 'f32' ? 4 : 2), make: () => [[releasedName(spec.name), w.tensor(spec.name)]] });
    }
  }
  return groups;
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
