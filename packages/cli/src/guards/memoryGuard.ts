// Refusing a run that would not fit (issue: `prefill --config flash-next` silently began
// generating 237.7 GiB of synthetic weights): the estimate against a limit, before anything
// is allocated, with both numbers in the message.
import { freemem } from 'node:os';
import { formatBytes, parseByteSize } from './byteSize.ts';
import { GARBAGE_FACTOR, type MemoryEstimate } from './memoryEstimate.ts';

export interface MemoryLimit {
  bytes: number;
  /** where the limit came from, for the message */
  from: string;
}

export const MAX_MEMORY_HELP = "memory this run may allocate, e.g. 12G (default: the machine's free memory)";

/** --max-memory, or the memory free now (the smaller of the OS's and the cgroup's view). */
export function memoryLimit(raw: string | undefined): MemoryLimit {
  if (raw !== undefined) return { bytes: parseByteSize(raw, '--max-memory'), from: '--max-memory' };
  return { bytes: Math.min(freemem(), process.availableMemory()), from: "the machine's free memory" };
}

function describe(e: MemoryEstimate): string {
  const parts: string[] = [];
  if (e.sourceWeights > 0)
    parts.push(`synthetic weights ${formatBytes(e.sourceWeights)} generated whole, fp64 generation scratch ${formatBytes(e.weightScratch)}`);
  parts.push(`weight slices held by the ranks ${formatBytes(e.rankWeights)}`);
  parts.push(`inputs ${formatBytes(e.inputs)}`);
  parts.push(`activation peak ${formatBytes(e.activationPeak)} (x${GARBAGE_FACTOR} for garbage awaiting collection)`);
  parts.push(`runtime ${formatBytes(e.runtime)}`);
  const heaviest = e.perRank.reduce((a, b) => (b.weights + b.activationPeak > a.weights + a.activationPeak ? b : a), e.perRank[0]);
  if (heaviest) parts.push(`per rank up to ${formatBytes(heaviest.weights)} of weight slices and ${formatBytes(heaviest.activationPeak)} of activations`);
  return parts.join('; ');
}

/** Throws when `what` (e.g. "prefill flash-next tp 4, T 8") would need more than the limit. */
export function checkMemory(what: string, estimate: MemoryEstimate, limit: MemoryLimit): void {
  if (estimate.bytes <= limit.bytes) return;
  throw new Error(
    `${what} needs about ${formatBytes(estimate.bytes)} of memory (${describe(estimate)}), ` +
      `more than ${limit.from} (${formatBytes(limit.bytes)}); nothing was allocated. Use fewer tokens or a smaller config, or raise --max-memory`,
  );
}
