import type { Graph, RunStats, ValueId } from '@hcsp/core';

// What the Node-side Chromium host and the page say to each other. Bulk data never goes
// through page.evaluate (it would be JSON/base64 over CDP): tensors are GET
// /job/<job>/tensor/<value id> and results are POSTed to /job/<job>/result/<value id>,
// raw word-layout bytes both ways (results can be tens of MB).

export interface PageJob {
  graph: Graph;
  keep?: ValueId[] | 'all';
}

export interface PageRunSummary {
  stats: RunStats;
  /** ids of the results the page POSTed */
  posted: ValueId[];
}

/** The functions the page installs on window. */
export interface PageApi {
  /** requests the adapter and device; returns the adapter's description */
  hcspInit(): Promise<string>;
  hcspRun(job: string, reportProgress: boolean): Promise<PageRunSummary>;
}

export function jobPath(job: string, kind: 'graph' | 'tensor' | 'result', id?: ValueId): string {
  return `/job/${encodeURIComponent(job)}/${kind}${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
}
