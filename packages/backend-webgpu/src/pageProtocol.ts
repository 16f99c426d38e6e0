import type { Graph, RunStats, ValueId } from '@hcsp/core';
import type { KernelDispatch, KernelPlan } from '@hcsp/kernels-wgsl';

// What the Node-side Chromium host and the page say to each other. Bulk data never goes
// through page.evaluate (it would be JSON/base64 over CDP): the graph is GET
// /job/<job>/graph, inputs and weights are GET /job/<job>/tensor/<value id> (a row-gathered
// weight's rows: POST there with the JSON row ranges as the body) and results are POSTed to
// /job/<job>/result/<value id>, raw word-layout bytes both ways (results can be tens of MB;
// a result's body is a Blob with its Content-Length, which the host checks).
// A job is one prepared graph; it runs many times.

export interface PageJob {
  graph: Graph;
}

export interface PageRunOptions {
  keep?: ValueId[] | 'all';
  keepOnDevice?: ValueId[];
  reportProgress: boolean;
}

export interface PageRunSummary {
  stats: RunStats;
  /** ids of the results the page POSTed */
  posted: ValueId[];
  /** the page's clock: the session's run (kernels, GPU readback) and the result POSTs */
  pageSeconds: PageSeconds;
}

export interface PageSeconds {
  run: number;
  post: number;
  postedBytes: number;
}

/** The functions the page installs on window. */
export interface PageApi {
  /** requests the adapter and device; returns the adapter's description */
  hcspInit(): Promise<string>;
  /** fetches the job's graph and uploads its weights (a GraphSession in the page) */
  hcspPrepare(job: string): Promise<void>;
  /** runs the prepared job on the inputs the host serves now */
  hcspRun(job: string, options: PageRunOptions): Promise<PageRunSummary>;
  /** POSTs a value the last run kept on the device */
  hcspRead(job: string, id: ValueId): Promise<void>;
  hcspDispose(job: string): Promise<void>;
  /** one raw plan: inputs GET /job/<job>/tensor/<port>, outputs POSTed to /job/<job>/result/<port>; seconds per rep */
  hcspRunPlan(job: string, plan: WirePlan, present: readonly boolean[], outputWords: readonly number[], reps: number): Promise<number[]>;
  hcspCompileErrors(wgsl: string): Promise<string | null>;
}

export function jobPath(job: string, kind: 'graph' | 'tensor' | 'result', id?: ValueId): string {
  return `/job/${encodeURIComponent(job)}/${kind}${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
}

/** A KernelPlan as JSON (uniform words as a plain array). */
export interface WirePlan {
  scratch: KernelPlan['scratch'];
  dispatches: (Omit<KernelDispatch, 'uniforms'> & { uniforms: number[] })[];
}
