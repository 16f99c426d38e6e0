// `prefill --trace` under hcsp launch or mpirun: every rank's RunTiming to rank 0 over the
// job's control plane (@hcsp/ranks' rankControl.ts). A control gather takes equal lengths from every
// rank and the store carries lines of at most 1 MiB, so the lengths go first, then the
// timings padded to the longest, in chunks.
import { gatherNumbers, type RankControl } from '@hcsp/ranks';
import type { RunTiming } from './nodeTimer.ts';

/** float64s per gather: 512 KiB, 683 KiB as the store's base64 */
const CHUNK = 1 << 16;
/** startUs, endUs, recorded, node count, unreported */
const HEAD = 5;

function pack(t: RunTiming): Float64Array {
  const out = new Float64Array(HEAD + t.nodeEndsUs.length);
  out.set([t.startUs, t.endUs, t.recorded ? 1 : 0, t.nodeEndsUs.length, t.unreported]);
  out.set(t.nodeEndsUs, HEAD);
  return out;
}

function unpack(v: Float64Array): RunTiming {
  const n = v[3];
  return { startUs: v[0], endUs: v[1], recorded: v[2] === 1, nodeEndsUs: v.slice(HEAD, HEAD + n), unreported: v[4] };
}

/** every rank's timing, in rank order (every rank gets them all) */
export async function gatherTimings(control: RankControl, mine: RunTiming): Promise<RunTiming[]> {
  const packed = pack(mine);
  const lengths = await gatherNumbers(control, Float64Array.of(packed.length), "the gather of the trace's lengths");
  const longest = Math.max(...lengths.map((l) => l[0]));
  const padded = new Float64Array(longest);
  padded.set(packed);
  const parts: Float64Array[][] = [];
  for (let at = 0; at < longest; at += CHUNK)
    parts.push(await gatherNumbers(control, padded.slice(at, Math.min(longest, at + CHUNK)), "the gather of the ranks' trace"));
  return lengths.map((_, r) => {
    const all = new Float64Array(longest);
    let at = 0;
    for (const p of parts) {
      all.set(p[r], at);
      at += p[r].length;
    }
    return unpack(all);
  });
}
