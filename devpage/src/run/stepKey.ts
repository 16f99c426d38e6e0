// Which sub-layer step a graph node belongs to, from its scope: "L3.attn_in.all_gather",
// "L3.attn.reduce_scatter" and "L3.attn_hc.combine_norm" are all step "L3.attn"; the PLE's
// nodes ("L1.ple.add") are step "L1.ple". The MTP head's nodes ("mtp.attn_hc.mix",
// "mtp.lm_head.all_gather") are step "mtp"; the other nodes outside the layers (the exit
// gathers, the mixer, the LM head) are step "exit".
const STEP_SCOPE = /^L(\d+)\.([a-z]+)/;
const STEP_KEY = /^L(\d+)\.([a-z]+)$/;

export const EXIT_STEP = 'exit';
export const MTP_STEP = 'mtp';

/** Order of a layer's steps in the forward: the PLE adds to the streams before the attention. */
const SUB_ORDER = ['ple', 'attn', 'mlp'];

export function stepKeyOf(scope: string): string {
  const m = STEP_SCOPE.exec(scope);
  if (m) return `L${m[1]}.${m[2]}`;
  return scope.startsWith(`${MTP_STEP}.`) ? MTP_STEP : EXIT_STEP;
}

/** Forward order of two step keys: by layer, then PLE, attn, mlp; the exit, then the MTP head. */
export function compareSteps(a: string, b: string): number {
  const rank = (key: string): [number, number] => {
    if (key === EXIT_STEP) return [Infinity, 0];
    if (key === MTP_STEP) return [Infinity, 1];
    const m = STEP_KEY.exec(key);
    if (!m || !SUB_ORDER.includes(m[2]))
      throw new Error(`step key ${JSON.stringify(key)} is not L<layer>.<${SUB_ORDER.join('|')}>, ${EXIT_STEP} or ${MTP_STEP}`);
    return [Number(m[1]), SUB_ORDER.indexOf(m[2])];
  };
  const [la, sa] = rank(a);
  const [lb, sb] = rank(b);
  return la !== lb ? (la < lb ? -1 : 1) : sa - sb;
}
