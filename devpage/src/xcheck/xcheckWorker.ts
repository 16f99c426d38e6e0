// The Web Worker that runs a live xcheck side on the CPU reference, so the page stays
// responsive; the named values come back as plain tensors (structured clone).
import { CpuBackend } from '@hcsp/core';
import { runLiveSide, type LiveRequest, type LiveSide, type LiveSideResult } from './liveXcheck.ts';

export interface XcheckWorkerRequest {
  id: number;
  request: LiveRequest;
  side: LiveSide;
}

export type XcheckWorkerReply =
  | { id: number; type: 'progress'; done: number; total: number }
  | { id: number; type: 'result'; result: LiveSideResult }
  | { id: number; type: 'error'; message: string };

interface WorkerScope {
  postMessage(message: XcheckWorkerReply): void;
  onmessage: ((e: MessageEvent<XcheckWorkerRequest>) => void) | null;
}

// only when loaded as a worker (the type exports above are imported by the page)
if (typeof document === 'undefined') {
  const scope = self as unknown as WorkerScope;
  const PROGRESS_INTERVAL_MS = 100;
  scope.onmessage = async (e: MessageEvent<XcheckWorkerRequest>) => {
    const { id, request, side } = e.data;
    let last = 0;
    try {
      const result = await runLiveSide(new CpuBackend(), request, side, (done, total) => {
        const now = performance.now();
        if (done === total || now - last >= PROGRESS_INTERVAL_MS) {
          last = now;
          scope.postMessage({ id, type: 'progress', done, total });
        }
      });
      scope.postMessage({ id, type: 'result', result });
    } catch (err) {
      scope.postMessage({ id, type: 'error', message: (err as Error).message });
    }
  };
}
