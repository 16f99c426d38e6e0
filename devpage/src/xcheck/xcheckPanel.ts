// The dev page's xcheck section: loads a report file (input or drag and drop) and runs the
// comparison live, a WebGPU side on the browser's own device in the page and a CPU side in a
// worker, then draws either with reportView.ts and says which backend ran.
import type { ReduceAlgorithm } from '@hcsp/core';
import type { XcheckReport } from '@hcsp/core/xcheck';
import { h } from '../view/dom.ts';
import { openBrowserWebGpu, webGpuMissing, type BrowserWebGpu } from './browserWebGpu.ts';
import { checkLiveRequest, liveReport, liveSides, runLiveSide, sideSpec, type LiveRequest, type LiveSide, type LiveSideResult } from './liveXcheck.ts';
import { parseXcheckReport } from './reportShape.ts';
import { renderXcheckReport } from './reportView.ts';
import { XCHECK_METRICS, type XcheckMetric } from './xcheckHeatmap.ts';
import type { XcheckWorkerReply, XcheckWorkerRequest } from './xcheckWorker.ts';

function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`dev page: element #${id} is missing from index.html`);
  return e as T;
}

const PROGRESS_INTERVAL_MS = 100;

/** The run inputs the page's one set of controls gives (the xcheck form adds only the pair and backend). */
export interface SharedRunControls {
  config: string;
  tokens: number;
  tp: number;
  seed: number;
  reduce: ReduceAlgorithm;
  /** the SP mode the page's controls resolve to: both sides of the 'backends' pair */
  sp: 'on' | 'off';
}

/** `shared` reads the page's controls at run time (it throws, naming the field, on a bad value). */
export function installXcheckPanel(shared: () => SharedRunControls): void {
  const form = byId<HTMLFormElement>('xc-controls');
  const status = byId<HTMLDivElement>('xc-status');
  const errorBox = byId<HTMLDivElement>('xc-error');
  const gpuNote = byId<HTMLDivElement>('xc-webgpu');
  const view = byId<HTMLDivElement>('xc-view');
  const runButton = byId<HTMLButtonElement>('xc-run');
  const dropZone = byId<HTMLElement>('xc-drop');
  const field = <T extends HTMLInputElement | HTMLSelectElement>(name: string): T => form.elements.namedItem(name) as T;

  for (const m of XCHECK_METRICS) field<HTMLSelectElement>('xcMetric').append(h('option', { value: m.value }, m.label));

  let current: { report: XcheckReport; source: string } | null = null;
  const metric = (): XcheckMetric => field<HTMLSelectElement>('xcMetric').value as XcheckMetric;
  const draw = (): void => {
    if (current) view.replaceChildren(renderXcheckReport(current.report, metric(), current.source));
  };
  const showError = (message: string | null): void => {
    errorBox.hidden = message === null;
    errorBox.textContent = message ?? '';
  };

  // the backend applies to the SP pair only (the other pair runs both)
  const syncPair = (): void => {
    field<HTMLSelectElement>('xcBackend').disabled = field<HTMLSelectElement>('xcPair').value !== 'sp';
  };

  const offerCpu = (why: string): void => {
    const button = h('button', { type: 'button', id: 'xc-use-cpu' }, 'Use the CPU reference instead');
    button.addEventListener('click', () => {
      field<HTMLSelectElement>('xcPair').value = 'sp';
      field<HTMLSelectElement>('xcBackend').value = 'cpu';
      syncPair();
      gpuNote.hidden = true;
    });
    gpuNote.replaceChildren(h('span', { class: 'xc-webgpu-why' }, why), ' The CPU reference runs the same graph in a worker: ', button);
    gpuNote.hidden = false;
  };

  const missing = webGpuMissing();
  if (missing) {
    field<HTMLSelectElement>('xcBackend').value = 'cpu';
    offerCpu(missing);
  }
  syncPair();

  // --- loading a report ---
  const load = async (file: File): Promise<void> => {
    try {
      const report = parseXcheckReport(await file.text(), file.name);
      showError(null);
      current = { report, source: `Report ${file.name}` };
      status.textContent = `Loaded ${file.name}: ${report.pairs.length} pair${report.pairs.length === 1 ? '' : 's'}, ${report.pairs.reduce((n, p) => n + p.tensors.length, 0)} tensors.`;
      draw();
    } catch (e) {
      showError((e as Error).message);
      status.textContent = `Could not load ${file.name}.`;
    }
  };
  const fileInput = field<HTMLInputElement>('xcFile');
  fileInput.addEventListener('change', () => {
    const f = fileInput.files?.[0];
    if (f) void load(f);
  });
  // a file dropped anywhere on the page is read as a report (the browser would otherwise navigate to it)
  document.addEventListener('dragover', (e) => {
    e.preventDefault();
    dropZone.classList.add('over');
  });
  document.addEventListener('dragleave', () => dropZone.classList.remove('over'));
  document.addEventListener('drop', (e) => {
    e.preventDefault();
    dropZone.classList.remove('over');
    const f = e.dataTransfer?.files?.[0];
    if (f) void load(f);
  });

  // --- the live run ---
  let worker: Worker | null = null;
  let nextId = 0;
  const waiting = new Map<number, { resolve: (r: LiveSideResult) => void; reject: (e: Error) => void; progress: (done: number, total: number) => void }>();
  const cpuWorker = (): Worker => {
    if (worker) return worker;
    worker = new Worker(new URL('./xcheckWorker.ts', import.meta.url), { type: 'module' });
    worker.onmessage = (e: MessageEvent<XcheckWorkerReply>) => {
      const m = e.data;
      const w = waiting.get(m.id);
      if (!w) return;
      if (m.type === 'progress') return w.progress(m.done, m.total);
      waiting.delete(m.id);
      if (m.type === 'result') w.resolve(m.result);
      else w.reject(new Error(m.message));
    };
    worker.onerror = (e) => {
      for (const w of waiting.values()) w.reject(new Error(`xcheck worker failed: ${e.message}`));
      waiting.clear();
      worker = null;
    };
    return worker;
  };
  const onCpu = (request: LiveRequest, side: LiveSide, progress: (done: number, total: number) => void): Promise<LiveSideResult> =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject, progress });
      const msg: XcheckWorkerRequest = { id, request, side };
      cpuWorker().postMessage(msg);
    });
  let gpu: Promise<BrowserWebGpu> | null = null;
  const webgpu = (): Promise<BrowserWebGpu> => {
    gpu ??= openBrowserWebGpu();
    gpu.catch(() => (gpu = null));
    return gpu;
  };

  const bar = h('progress', { max: 1, value: 0 });
  const runSide = async (request: LiveRequest, side: LiveSide, which: 'a' | 'b'): Promise<{ result: LiveSideResult; on: string }> => {
    let last = 0;
    const progress = (done: number, total: number): void => {
      const now = performance.now();
      if (done !== total && now - last < PROGRESS_INTERVAL_MS) return;
      last = now;
      bar.max = total;
      bar.value = done;
      status.replaceChildren(`run ${which} (${sideSpec(side, request)}): node ${done} / ${total} `, bar);
    };
    status.textContent = `run ${which} (${sideSpec(side, request)}): preparing on ${side.backend === 'webgpu' ? 'WebGPU' : 'the CPU reference'}...`;
    if (side.backend === 'cpu') return { result: await onCpu(request, side, progress), on: 'the CPU reference (worker)' };
    let g: BrowserWebGpu;
    try {
      g = await webgpu();
    } catch (e) {
      offerCpu((e as Error).message);
      throw e;
    }
    return { result: await runLiveSide(g.backend, request, side, progress), on: `WebGPU (adapter: ${g.adapter})` };
  };

  const request = (): LiveRequest => {
    const r: LiveRequest = {
      ...shared(),
      pair: field<HTMLSelectElement>('xcPair').value as LiveRequest['pair'],
      backend: field<HTMLSelectElement>('xcBackend').value as LiveRequest['backend'],
    };
    checkLiveRequest(r);
    return r;
  };

  form.addEventListener('change', (e) => {
    const name = (e.target as HTMLInputElement).name;
    if (name === 'xcPair') syncPair();
    if (name === 'xcMetric') draw();
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    let r: LiveRequest;
    try {
      r = request();
    } catch (err) {
      showError((err as Error).message);
      return;
    }
    showError(null);
    runButton.disabled = true;
    try {
      const sides = liveSides(r);
      const a = await runSide(r, sides.a, 'a');
      const b = await runSide(r, sides.b, 'b');
      const report = liveReport(r, a.result, b.result);
      current = { report, source: 'Live run' };
      const ranOn = a.on === b.on ? `Ran on ${a.on}` : `Ran run a on ${a.on}, run b on ${b.on}`;
      status.replaceChildren(
        h(
          'span',
          { class: 'xc-ran', 'data-a': sides.a.backend, 'data-b': sides.b.backend },
          `${ranOn}: run a ${sideSpec(sides.a, r)} ${a.result.seconds.toFixed(2)} s, run b ${sideSpec(sides.b, r)} ${b.result.seconds.toFixed(2)} s (${r.config}, T ${r.tokens}, tp ${r.tp}).`,
        ),
      );
      draw();
    } catch (err) {
      status.textContent = 'Live run failed.';
      showError((err as Error).message);
    } finally {
      runButton.disabled = false;
    }
  });
}
