// Which sub-layer step a graph node belongs to, from its scope: "L3.attn_in.all_gather",
// "L3.attn.reduce_scatter" and "L3.attn_hc.combine_norm" are all step "L3.attn". Nodes
// outside the layers (the exit gathers, the mixer) are step "exit".
const STEP_SCOPE = /^L(\d+)\.([a-z]+)/;

export const EXIT_STEP = 'exit';

export function stepKeyOf(scope: string): string {
  const m = STEP_SCOPE.exec(scope);
  return m ? `L${m[1]}.${m[2]}` : EXIT_STEP;
}
