// Memory of one phase: the addon's allocator peak and the process's RSS, against the tensors
// that must be live.
import { collectGarbage } from './collectGarbage.ts';
import type { LiveBytes } from './graphCost.ts';
import { GOALS } from './hostGoals.ts';

export interface MemoryMeasure {
  /** bytes that must be live (from the graph) */
  mustLive: LiveBytes;
  /** the addon allocator's peak during the phase, above what was live before it */
  addonPeakBytes: number;
  /** false: the allocator's all-time peak did not rise, so this is the highest of samples every few ms */
  addonPeakExact: boolean;
  rssBeforeBytes: number;
  rssPeakBytes: number;
  /** false: getrusage's maxRSS did not rise during the phase, so the peak is the highest sample */
  rssPeakExact: boolean;
  /** rssPeakBytes - rssBeforeBytes */
  rssDeltaBytes: number;
  addonOverLive: number;
  rssDeltaOverLive: number;
  /** the whole process at its peak (maxRSS when it rose) over the tensors that must be live */
  rssPeakOverLive: number;
  goal: number;
  addonMet: boolean;
  rssMet: boolean;
}

/** the allocator counters measureMemory reads (the native addon's stats()) */
export interface Addonish {
  stats(): { liveBytes: number; peakBytes: number };
}

export async function measureMemory<T>(addon: Addonish, mustLive: LiveBytes, work: () => Promise<T>): Promise<{ value: T; memory: MemoryMeasure }> {
  collectGarbage();
  const before = addon.stats();
  const rssBefore = process.memoryUsage.rss();
  const maxRssBefore = process.resourceUsage().maxRSS * 1024;
  let rssSample = rssBefore;
  let liveSample = before.liveBytes;
  const sample = (): void => {
    rssSample = Math.max(rssSample, process.memoryUsage.rss());
    liveSample = Math.max(liveSample, addon.stats().liveBytes);
  };
  const timer = setInterval(sample, 5);
  let value: T;
  try {
    value = await work();
  } finally {
    clearInterval(timer);
  }
  sample();
  const after = addon.stats();
  const maxRssAfter = process.resourceUsage().maxRSS * 1024;
  const addonPeakExact = after.peakBytes > before.peakBytes;
  const addonPeakBytes = (addonPeakExact ? after.peakBytes : liveSample) - before.liveBytes;
  const rssPeakExact = maxRssAfter > maxRssBefore;
  const rssPeakBytes = rssPeakExact ? Math.max(maxRssAfter, rssSample) : rssSample;
  const rssDeltaBytes = rssPeakBytes - rssBefore;
  const addonOverLive = addonPeakBytes / mustLive.total;
  const rssDeltaOverLive = rssDeltaBytes / mustLive.total;
  return {
    value,
    memory: {
      mustLive,
      addonPeakBytes,
      addonPeakExact,
      rssBeforeBytes: rssBefore,
      rssPeakBytes,
      rssPeakExact,
      rssDeltaBytes,
      addonOverLive,
      rssDeltaOverLive,
      rssPeakOverLive: rssPeakBytes / mustLive.total,
      goal: GOALS.memoryOverLive,
      addonMet: addonOverLive <= GOALS.memoryOverLive,
      rssMet: rssDeltaOverLive <= GOALS.memoryOverLive,
    },
  };
}
