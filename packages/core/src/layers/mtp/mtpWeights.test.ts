import { describe, expect, it } from 'vitest';
import { FLASH_NEXT, SMALL } from '../../config/presets.ts';
import { modelWeightSpecs } from '../../model/modelWeights.ts';
import { MODEL_SUB_LAYERS } from '../modelSubLayers.ts';
import { STAND_IN_SUB_LAYERS } from '../standIn/standInSubLayers.ts';
import { mtpDraftLayerWeightSpecs, mtpHostLayer } from './mtpDraftLayer.ts';
import { lmHeadRankWeight, lmHeadWeightSpec, mtpHcPrefix, mtpHeadWeightSpecs } from './mtpWeights.ts';

describe('MTP head and LM head checkpoint names', () => {
  it('names and shapes of the Flash-Next MTP head (ATOM qwen4_exp_mtp.py)', () => {
    const shapes = Object.fromEntries(mtpHeadWeightSpecs(FLASH_NEXT).map((s) => [s.name, s.shape]));
    expect(shapes['mtp.pre_fc_norm_embedding.weight']).toEqual([2560]);
    expect(shapes['mtp.pre_fc_norm_hidden.weight']).toEqual([10240]);
    expect(shapes['mtp.fc_embedding.weight']).toEqual([2560, 2560]);
    expect(shapes['mtp.fc_hidden.weight']).toEqual([2560, 2560]);
    expect(shapes['mtp.layers.0.attn_hyper_connection.input_mix_weight_down.weight']).toEqual([320, 10240]);
    expect(shapes['mtp.layers.0.mlp_hyper_connection.block_inject_weight.weight']).toEqual([4, 10240]);
    expect(shapes['mtp.hyper_connection_mixer.input_mix_weight_up.weight']).toEqual([10240, 320]);
    // the mixer has no inject weights; embed_tokens and lm_head are the target's
    expect(shapes['mtp.hyper_connection_mixer.block_inject_weight.weight']).toBeUndefined();
    expect(Object.keys(shapes).some((n) => n.includes('embed_tokens') || n.includes('lm_head'))).toBe(false);
    expect(mtpHcPrefix('mixer')).toBe('mtp.hyper_connection_mixer');
  });

  it('the untied LM head is lm_head.weight [vocab, H]', () => {
    const s = lmHeadWeightSpec(FLASH_NEXT);
    expect([s.name, s.shape, s.dtype]).toEqual(['lm_head.weight', [248320, 2560], 'bf16']);
  });

  it('vocab-parallel LM head: rank r reads rows [r*V/tp, (r+1)*V/tp), the whole tensor at tp 1', () => {
    expect(lmHeadRankWeight(FLASH_NEXT, 0, 1)).toEqual({ name: 'lm_head.weight' });
    expect(lmHeadRankWeight(FLASH_NEXT, 3, 8)).toEqual({ name: 'lm_head.weight', slice: { axis: 0, ranges: [[93120, 124160]] } });
    expect(() => lmHeadRankWeight({ ...SMALL, vocabSize: 4095 }, 0, 2)).toThrow(/tp 2 does not divide the vocabulary 4095/);
  });

  it("the draft layer's sub-layer tensors: one QSA layer with MoE under mtp.layers.0, no PLE, no GDN", () => {
    expect(mtpHostLayer(FLASH_NEXT)).toBe(47);
    const names = mtpDraftLayerWeightSpecs(FLASH_NEXT, MODEL_SUB_LAYERS).map((s) => s.name);
    for (const n of [
      'mtp.layers.0.self_attn.q_proj.weight',
      'mtp.layers.0.self_attn.o_proj.weight',
      'mtp.layers.0.self_attn.indexer.index_qk_proj.weight',
      'mtp.layers.0.mlp.gate.weight',
      'mtp.layers.0.mlp.shared_expert_gate.weight',
    ]) {
      expect(names).toContain(n);
    }
    expect(names.every((n) => n.startsWith('mtp.layers.0.') && !n.includes('.ple.') && !n.includes('linear_attn'))).toBe(true);
    // the whole model: target tensors, lm_head, the MTP head, each declared once
    const all = modelWeightSpecs(SMALL, STAND_IN_SUB_LAYERS).map((s) => s.name);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toContain('lm_head.weight');
    expect(all).toContain('mtp.layers.0.standin_attn.weight');
    expect(all).toContain('mtp.fc_hidden.weight');
  });
});
