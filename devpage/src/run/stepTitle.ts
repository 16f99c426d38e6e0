// A step's label on the page: with the full model's sub-layers, the step key plus what
// runs there (modelSubLayers.ts: full attention every fullAttentionInterval-th layer,
// GatedDeltaNet on the others, MoE as every mlp, the PLE on its layers). The stand-in
// sub-layers are the same on every layer, so their steps keep the bare key.
import { layerKind, type ModelConfig } from '@hcsp/core';
import type { SubLayerChoice } from './runComparison.ts';

const STEP_KEY = /^L(\d+)\.(attn|mlp|ple)$/;

export function stepTitle(step: string, config: ModelConfig, subLayers: SubLayerChoice): string {
  const m = STEP_KEY.exec(step);
  if (subLayers !== 'model' || !m) return step;
  const layer = Number(m[1]);
  if (layer >= config.numLayers) throw new Error(`step ${step}: layer ${layer} is past config '${config.name}' (${config.numLayers} layers)`);
  const kind = m[2] === 'mlp' ? 'MoE' : m[2] === 'ple' ? 'PLE' : layerKind(config, layer) === 'attention' ? 'attention' : 'GDN';
  return `${step} (${kind})`;
}
