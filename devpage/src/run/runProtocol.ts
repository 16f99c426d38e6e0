// Messages between the page and the run worker.
import type { RunReport, RunRequest } from './runComparison.ts';

export interface WorkerRequest {
  id: number;
  request: RunRequest;
}

export type WorkerReply =
  | { id: number; type: 'progress'; run: 'a' | 'b'; done: number; total: number }
  | { id: number; type: 'result'; report: RunReport }
  | { id: number; type: 'error'; message: string };
