import { describe, expect, it } from 'vitest';
import { layerKind } from '../config/modelConfig.ts';
import { FLASH_NEXT } from '../config/presets.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import { modelWeightSpecs } from './modelWeights.ts';

// The Hugging Face state dict of Qwen3.8-Flash-Next, written from the module tree of
// huggingface/transformers src/transformers/models/qwen4_exp/modeling_qwen4_exp.py
// (Qwen4ExpForCausalLM -> Qwen4ExpTextModel; parameter names and shapes from each module's
// __init__), with Flash-Next's values (model.md). `mtp.*` is not an HF module (HF ignores
// `^mtp.*` on load): those rows are ATOM's atom/models/qwen4_exp_mtp.py
// (Qwen4ExpMultiTokenPredictor, prefix "mtp."). {i} is a decoder layer, {k} a PLE shard.
const H = 2560;
const n = 4;
const nH = n * H;
const r = 320;
const [heads, kvHeads, headDim] = [24, 2, 256];
const [ixHeads, ixKv, ixDim] = [4, 1, 128];
const [kh, vh, dk, dv, convK] = [16, 48, 128, 128, 4];
const [E, I, Is] = [512, 640, 640];
const vocab = 248320;

type Where = 'any' | 'linear' | 'attention' | 'ple';
interface Row {
  pattern: string;
  shape: number[];
  /** the decoder layers that have it */
  where: Where;
  source: string;
}

// Qwen4ExpTextGatedResidual(config, use_combine): hc_norm = RMSNorm(n*H, group_size=H),
// input_mix_weight_down = Linear(n*H, hc_lowrank), input_mix_weight_up = Linear(hc_lowrank,
// n*H), block_inject_weight = Linear(n*H, n) only with use_combine.
const hc = (prefix: string, where: Where, inject: boolean): Row[] => [
  { pattern: `${prefix}.hc_norm.weight`, shape: [nH], where, source: 'Qwen4ExpTextGatedResidual.hc_norm' },
  { pattern: `${prefix}.input_mix_weight_down.weight`, shape: [r, nH], where, source: 'Qwen4ExpTextGatedResidual.input_mix_weight_down' },
  { pattern: `${prefix}.input_mix_weight_up.weight`, shape: [nH, r], where, source: 'Qwen4ExpTextGatedResidual.input_mix_weight_up' },
  ...(inject ? [{ pattern: `${prefix}.block_inject_weight.weight`, shape: [n, nH], where, source: 'Qwen4ExpTextGatedResidual.block_inject_weight' }] : []),
];

// Qwen4ExpTextDecoderLayer: linear_attn (layer_type linear_attention) or self_attn, mlp,
// ple (only on ple_layer_ids), attn_hyper_connection, mlp_hyper_connection.
const layer = (p: string, withPle: boolean): Row[] => [
  ...hc(`${p}.attn_hyper_connection`, 'any', true),
  ...hc(`${p}.mlp_hyper_connection`, 'any', true),
  // Qwen4ExpTextGatedDeltaNet
  {
    pattern: `${p}.linear_attn.in_proj_qkv.weight`,
    shape: [2 * kh * dk + vh * dv, H],
    where: 'linear',
    source: 'GatedDeltaNet.in_proj_qkv = Linear(H, key_dim*2 + value_dim)',
  },
  { pattern: `${p}.linear_attn.in_proj_z.weight`, shape: [vh * dv, H], where: 'linear', source: 'GatedDeltaNet.in_proj_z' },
  { pattern: `${p}.linear_attn.in_proj_b.weight`, shape: [vh, H], where: 'linear', source: 'GatedDeltaNet.in_proj_b' },
  { pattern: `${p}.linear_attn.in_proj_a.weight`, shape: [vh, H], where: 'linear', source: 'GatedDeltaNet.in_proj_a' },
  {
    pattern: `${p}.linear_attn.conv1d.weight`,
    shape: [2 * kh * dk + vh * dv, 1, convK],
    where: 'linear',
    source: 'GatedDeltaNet.conv1d = Conv1d(conv_dim, conv_dim, K, groups=conv_dim)',
  },
  { pattern: `${p}.linear_attn.dt_bias`, shape: [vh], where: 'linear', source: 'GatedDeltaNet.dt_bias' },
  { pattern: `${p}.linear_attn.A_log`, shape: [vh], where: 'linear', source: 'GatedDeltaNet.A_log' },
  { pattern: `${p}.linear_attn.norm.weight`, shape: [dv], where: 'linear', source: 'GatedDeltaNet.norm = RMSNormGated(head_v_dim)' },
  { pattern: `${p}.linear_attn.out_proj.weight`, shape: [H, vh * dv], where: 'linear', source: 'GatedDeltaNet.out_proj' },
  // Qwen4ExpTextAttention (q_proj carries [query | gate] per head) and its Qwen4ExpTextQSAIndexer
  { pattern: `${p}.self_attn.q_proj.weight`, shape: [heads * headDim * 2, H], where: 'attention', source: 'Attention.q_proj = Linear(H, heads*head_dim*2)' },
  { pattern: `${p}.self_attn.k_proj.weight`, shape: [kvHeads * headDim, H], where: 'attention', source: 'Attention.k_proj' },
  { pattern: `${p}.self_attn.v_proj.weight`, shape: [kvHeads * headDim, H], where: 'attention', source: 'Attention.v_proj' },
  { pattern: `${p}.self_attn.o_proj.weight`, shape: [H, heads * headDim], where: 'attention', source: 'Attention.o_proj' },
  { pattern: `${p}.self_attn.q_norm.weight`, shape: [headDim], where: 'attention', source: 'Attention.q_norm' },
  { pattern: `${p}.self_attn.k_norm.weight`, shape: [headDim], where: 'attention', source: 'Attention.k_norm' },
  { pattern: `${p}.self_attn.indexer.index_qk_proj.weight`, shape: [(ixHeads + ixKv) * ixDim, H], where: 'attention', source: 'QSAIndexer.index_qk_proj' },
  { pattern: `${p}.self_attn.indexer.q_layernorm.weight`, shape: [ixDim], where: 'attention', source: 'QSAIndexer.q_layernorm' },
  { pattern: `${p}.self_attn.indexer.k_layernorm.weight`, shape: [ixDim], where: 'attention', source: 'QSAIndexer.k_layernorm' },
  // Qwen4ExpTextSparseMoeBlock: gate (TopKRouter.weight), experts (3-D Parameters, no .weight), shared_expert (MLP), shared_expert_gate
  { pattern: `${p}.mlp.gate.weight`, shape: [E, H], where: 'any', source: 'TopKRouter.weight' },
  { pattern: `${p}.mlp.experts.gate_up_proj`, shape: [E, 2 * I, H], where: 'any', source: 'Experts.gate_up_proj = Parameter(E, 2*I, H)' },
  { pattern: `${p}.mlp.experts.down_proj`, shape: [E, H, I], where: 'any', source: 'Experts.down_proj = Parameter(E, H, I)' },
  { pattern: `${p}.mlp.shared_expert.gate_proj.weight`, shape: [Is, H], where: 'any', source: 'MLP.gate_proj' },
  { pattern: `${p}.mlp.shared_expert.up_proj.weight`, shape: [Is, H], where: 'any', source: 'MLP.up_proj' },
  { pattern: `${p}.mlp.shared_expert.down_proj.weight`, shape: [H, Is], where: 'any', source: 'MLP.down_proj' },
  { pattern: `${p}.mlp.shared_expert_gate.weight`, shape: [1, H], where: 'any', source: 'SparseMoeBlock.shared_expert_gate = Linear(H, 1)' },
  // Qwen4ExpTextPLELayer. ngram_embedding = Embedding(320,001,536 padded rows, 2560 / 16):
  // config.split_ngram_parts documents that the checkpoint stores it as row shards that
  // loading concatenates (ATOM _embedding_shard_loader: shard_{k}, ceil(rows / 128) rows each).
  ...(withPle
    ? ([
        {
          pattern: `${p}.ple.ple_embedding.ngram_embedding.shard_{k}.weight`,
          shape: [2_500_012, 160],
          where: 'ple',
          source: 'NGramEmbedding.ngram_embedding (row shard)',
        },
        { pattern: `${p}.ple.key_proj.weight`, shape: [nH, H], where: 'ple', source: 'PLELayer.key_proj = Linear(ple_embed_dim, n*H)' },
        { pattern: `${p}.ple.value_proj.weight`, shape: [H, H], where: 'ple', source: 'PLELayer.value_proj = Linear(ple_embed_dim, H)' },
        { pattern: `${p}.ple.norm_key.weight`, shape: [nH], where: 'ple', source: 'PLELayer.norm_key' },
        { pattern: `${p}.ple.norm_query.weight`, shape: [nH], where: 'ple', source: 'PLELayer.norm_query' },
        { pattern: `${p}.ple.norm_conv.weight`, shape: [nH], where: 'ple', source: 'PLELayer.norm_conv' },
        { pattern: `${p}.ple.conv1d.weight`, shape: [nH, 1, 4], where: 'ple', source: 'PLELayer.conv1d = Conv1d(nH, nH, 4, groups=nH, dilation=ngram_size)' },
      ] as Row[])
    : []),
];

const TABLE: Row[] = [
  { pattern: 'model.embed_tokens.weight', shape: [vocab, H], where: 'any', source: 'Qwen4ExpTextModel.embed_tokens' },
  ...layer('model.layers.{i}', true),
  ...hc('model.hyper_connection_mixer', 'any', false),
  { pattern: 'lm_head.weight', shape: [vocab, H], where: 'any', source: 'Qwen4ExpForCausalLM.lm_head' },
  { pattern: 'mtp.pre_fc_norm_embedding.weight', shape: [H], where: 'any', source: 'ATOM Qwen4ExpMultiTokenPredictor.pre_fc_norm_embedding' },
  { pattern: 'mtp.pre_fc_norm_hidden.weight', shape: [nH], where: 'any', source: 'ATOM Qwen4ExpMultiTokenPredictor.pre_fc_norm_hidden' },
  { pattern: 'mtp.fc_embedding.weight', shape: [H, H], where: 'any', source: 'ATOM Qwen4ExpMultiTokenPredictor.fc_embedding' },
  { pattern: 'mtp.fc_hidden.weight', shape: [H, H], where: 'any', source: 'ATOM Qwen4ExpMultiTokenPredictor.fc_hidden' },
  // the draft layer: one attention-type Qwen4ExpDecoderLayer without PLE
  ...layer('mtp.layers.0', false).filter((row) => row.where !== 'linear'),
  ...hc('mtp.hyper_connection_mixer', 'any', false),
];

const PLE_LAYER = FLASH_NEXT.ple.layerIds[0];

function match(name: string): { row: Row; layer: number | null } | null {
  for (const row of TABLE) {
    const re = new RegExp(`^${row.pattern.replace(/\./g, '\\.').replace('{i}', '(\\d+)').replace('{k}', '\\d+')}$`);
    const m = re.exec(name);
    if (m) return { row, layer: row.pattern.includes('{i}') ? Number(m[1]) : null };
  }
  return null;
}

describe('HF state-dict naming', () => {
  const specs = modelWeightSpecs(FLASH_NEXT, MODEL_SUB_LAYERS);

  it('every tensor the Flash-Next model reads is an HF (or ATOM mtp) state-dict tensor of that shape, on a layer that has it', () => {
    const wrong: string[] = [];
    for (const s of specs) {
      const hit = match(s.name);
      if (!hit) {
        wrong.push(`${s.name}: no such tensor`);
        continue;
      }
      const { row, layer: i } = hit;
      if (JSON.stringify(s.shape) !== JSON.stringify(row.shape)) wrong.push(`${s.name}: shape [${s.shape}] but HF ${row.source} is [${row.shape}]`);
      if (i !== null) {
        const ok =
          row.where === 'any' ||
          (row.where === 'ple' && i === PLE_LAYER) ||
          (row.where === 'linear' && layerKind(FLASH_NEXT, i) === 'linear_attention') ||
          (row.where === 'attention' && layerKind(FLASH_NEXT, i) === 'attention');
        if (!ok) wrong.push(`${s.name}: HF has ${row.source} only on ${row.where} layers`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("reads every tensor of every decoder layer's HF modules", () => {
    const read = new Set(specs.map((s) => s.name));
    const missing: string[] = [];
    for (let i = 0; i < FLASH_NEXT.numLayers; i++) {
      for (const row of layer('model.layers.{i}', i === PLE_LAYER)) {
        if (row.where === 'linear' && layerKind(FLASH_NEXT, i) !== 'linear_attention') continue;
        if (row.where === 'attention' && layerKind(FLASH_NEXT, i) !== 'attention') continue;
        const shards = row.pattern.includes('{k}') ? FLASH_NEXT.ple.splitNgramParts : 1;
        for (let k = 0; k < shards; k++) {
          const name = row.pattern.replace('{i}', String(i)).replace('{k}', String(k));
          if (!read.has(name)) missing.push(name);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});
