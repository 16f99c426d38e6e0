import { describe, expect, it } from 'vitest';
import { TINY } from '../config/presets.ts';
import type { RoundingContract } from '../hc/hcContract.ts';
import { MODEL_SUB_LAYERS } from '../layers/modelSubLayers.ts';
import type { TopkTies } from '../numerics/topkTies.ts';
import { preparePrefill } from './prefill.ts';

// The decoder graph's top-k tie rule: the 'hf-eager' contract (comparing with an HF dump made
// in PyTorch on the CPU) asks every moeRoute and qsaSelect, the MTP head's included, for
// torch's CPU rule; the other contracts leave the attribute out (ATOM's rule, the graphs as
// before); an explicit `ties` wins over the contract's.
function tiesOf(contract: RoundingContract, ties?: TopkTies) {
  const p = preparePrefill({
    config: TINY,
    tokens: 21,
    tp: 2,
    sp: 'on',
    reduce: 'ring',
    seed: 8,
    subLayers: MODEL_SUB_LAYERS,
    contract,
    ...(ties ? { ties } : {}),
  });
  const nodes = p.graph.nodes.filter((n) => n.op === 'moeRoute' || n.op === 'qsaSelect');
  return { scopes: new Set(nodes.map((n) => n.scope)), ties: new Set(nodes.map((n) => n.attrs.ties)) };
}

describe('the decoder graph top-k tie rule', () => {
  it("'hf-eager' asks every router and QSA selection (layers and MTP head) for ties=torch-cpu", () => {
    const { scopes, ties } = tiesOf('hf-eager');
    expect(scopes).toEqual(
      new Set([...Array.from({ length: TINY.numLayers }, (_, l) => `L${l}.mlp.route`), 'L3.attn.qsa_select', 'mtp.attn.qsa_select', 'mtp.mlp.route']),
    );
    expect(ties).toEqual(new Set(['torch-cpu']));
  });

  it("'atom' and 'hf' leave the attribute out (the default rule, ATOM's)", () => {
    expect(tiesOf('atom').ties).toEqual(new Set([undefined]));
    expect(tiesOf('hf').ties).toEqual(new Set([undefined]));
  });

  it('an explicit ties wins over the contract', () => {
    expect(tiesOf('hf-eager', 'lower-index').ties).toEqual(new Set([undefined]));
    expect(tiesOf('atom', 'torch-cpu').ties).toEqual(new Set(['torch-cpu']));
  });
});
