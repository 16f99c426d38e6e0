// What `hcsp bench` lends the benchmarks of @hcsp/bench: the progress bar, interruption of
// device work by a signal, and the memory guard against --max-memory (or the free memory).
import type { BenchHooks } from '@hcsp/bench';
import { formatBytes } from '@hcsp/core';
import { estimateGraphMemory, RUNTIME_BYTES } from '../guards/memoryEstimate.ts';
import { checkMemory, memoryLimit } from '../guards/memoryGuard.ts';
import { nodeProgress } from '../progress.ts';
import { interruptible } from '../signals.ts';

/** The hooks for one run, its limit from `maxMemory` (--max-memory as given), taken at each check. */
export function cliBenchHooks(maxMemory: string | undefined): BenchHooks {
  return {
    progress: (label, quiet) => nodeProgress(label, { quiet }),
    onDevice: (work) => interruptible(work),
    memory: {
      checkGraph(what, graph, specs, heldBytes) {
        const estimate = estimateGraphMemory(graph, { kind: 'synthetic', specs });
        checkMemory(what, { ...estimate, bytes: estimate.bytes + heldBytes }, memoryLimit(maxMemory));
      },
      checkLive(what, live, extraBytes) {
        checkMemory(
          what,
          {
            bytes: live.total + extraBytes + RUNTIME_BYTES,
            sourceWeights: 0,
            rankWeights: live.weights,
            weightScratch: 0,
            inputs: live.inputs,
            activationPeak: live.activationPeak + extraBytes,
            perRank: [],
            runtime: RUNTIME_BYTES,
          },
          memoryLimit(maxMemory),
        );
      },
      graphLimit() {
        const limit = memoryLimit(maxMemory);
        return (graph, specs) => {
          const estimate = estimateGraphMemory(graph, { kind: 'synthetic', specs });
          return estimate.bytes > limit.bytes ? `the memory estimate ${formatBytes(estimate.bytes)} is over ${limit.from} (${formatBytes(limit.bytes)})` : null;
        };
      },
    },
  };
}
