import { describe, expect, it } from 'vitest';
import { FLASH_NEXT } from '../../config/presets.ts';
import { lmHeadWeightSpec, mtpHcPrefix, mtpHeadWeightSpecs } from './mtpWeights.ts';

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
});
