// The Web Worker that runs the two CPU reference forwards, so the page stays responsive.
import { runComparison } from './runComparison.ts';
import type { WorkerReply, WorkerRequest } from './runProtocol.ts';

/** the part of DedicatedWorkerGlobalScope used here (the webworker lib would clash with DOM in this program) */
interface WorkerScope {
  postMessage(message: WorkerReply): void;
  onmessage: ((e: MessageEvent<WorkerRequest>) => void) | null;
}
const scope = self as unknown as WorkerScope;
const post = (m: WorkerReply): void => scope.postMessage(m);
/** a progress message at most this often: one per node would flood the page */
const PROGRESS_INTERVAL_MS = 100;

scope.onmessage = async (e: MessageEvent<WorkerRequest>) => {
  const { id, request } = e.data;
  let last = 0;
  try {
    const report = await runComparison(request, (run, done, total) => {
      const now = performance.now();
      if (done === total || now - last >= PROGRESS_INTERVAL_MS) {
        last = now;
        post({ id, type: 'progress', run, done, total });
      }
    });
    post({ id, type: 'result', report });
  } catch (err) {
    post({ id, type: 'error', message: (err as Error).message });
  }
};
