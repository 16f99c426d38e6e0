import { describe, expect, it } from 'vitest';
import { SMALL } from '@hcsp/core';
import { stepTitle } from './stepTitle.ts';

describe('stepTitle', () => {
  it("names the full model's sub-layer behind each step (small: attention on layers 3 and 7)", () => {
    const t = (step: string) => stepTitle(step, SMALL, 'model');
    expect(['L0.attn', 'L2.attn', 'L3.attn', 'L7.attn', 'L4.mlp', 'L1.ple'].map(t)).toEqual([
      'L0.attn (GDN)',
      'L2.attn (GDN)',
      'L3.attn (attention)',
      'L7.attn (attention)',
      'L4.mlp (MoE)',
      'L1.ple (PLE)',
    ]);
    expect(t('exit')).toBe('exit');
    expect(t('exit: MTP state')).toBe('exit: MTP state');
  });

  it('keeps the bare key for the stand-in sub-layers and rejects a layer past the config', () => {
    expect(stepTitle('L3.attn', SMALL, 'stand-in')).toBe('L3.attn');
    expect(() => stepTitle('L8.mlp', SMALL, 'model')).toThrow("step L8.mlp: layer 8 is past config 'small' (8 layers)");
  });
});
