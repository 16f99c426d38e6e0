// The dev page: reads the controls, draws the plan on every change (no execution, any
// config), and on "run" sends the two CPU reference forwards to a worker and draws the
// comparison.
import { PRESETS, REDUCE_ALGORITHMS } from '@hcsp/core';
import { DEFAULT_CONTROLS, readControls, type RawControls } from './controlsModel.ts';
import { planView } from './plan/planView.ts';
import { modelSubLayers, RUNNABLE_CONFIGS } from './run/runComparison.ts';
import type { WorkerReply, WorkerRequest } from './run/runProtocol.ts';
import { h } from './view/dom.ts';
import { renderPlan } from './view/renderPlan.ts';
import { renderRun } from './view/renderRun.ts';
import { installXcheckPanel } from './xcheck/xcheckPanel.ts';

function byId<T extends HTMLElement>(id: string): T {
  const e = document.getElementById(id);
  if (!e) throw new Error(`dev page: element #${id} is missing from index.html`);
  return e as T;
}

const form = byId<HTMLFormElement>('controls');
const errorBox = byId<HTMLDivElement>('error');
const planBox = byId<HTMLDivElement>('plan');
const progressBox = byId<HTMLDivElement>('progress');
const runBox = byId<HTMLDivElement>('run-view');
const runButton = byId<HTMLButtonElement>('run');
const cancelButton = byId<HTMLButtonElement>('cancel');
const field = (name: keyof RawControls): HTMLInputElement | HTMLSelectElement => form.elements.namedItem(name) as HTMLInputElement | HTMLSelectElement;

function fillOptions(): void {
  const config = field('config') as HTMLSelectElement;
  for (const name of Object.keys(PRESETS))
    config.append(h('option', { value: name, selected: name === 'small' }, name === 'flash-next' ? 'flash-next (plan only)' : name));
  for (const alg of REDUCE_ALGORITHMS) {
    field('reduce').append(h('option', { value: alg }, alg));
    field('bReduce').append(h('option', { value: alg }, alg));
  }
  // the full model's sub-layers, once @hcsp/core exports them
  if (modelSubLayers()) field('subLayers').append(h('option', { value: 'model' }, 'full model (attention/GDN, MoE, PLE)'));
  // one source for the first load's values (the unit test checks them against the CLI's)
  for (const [name, value] of Object.entries(DEFAULT_CONTROLS)) field(name as keyof RawControls).value = value;
}

function raw(): RawControls {
  const names: (keyof RawControls)[] = ['config', 'tokens', 'tp', 'sp', 'reduce', 'seed', 'minTokens', 'subLayers', 'bSp', 'bReduce'];
  return Object.fromEntries(names.map((n) => [n, field(n).value])) as unknown as RawControls;
}

function showError(message: string | null): void {
  errorBox.hidden = message === null;
  errorBox.textContent = message ?? '';
}

function updatePlan(): void {
  try {
    const c = readControls(raw());
    planBox.replaceChildren(renderPlan(planView(c.plan)));
    const runnable = (RUNNABLE_CONFIGS as readonly string[]).includes(c.run.config);
    runButton.disabled = !runnable || running !== null;
    runButton.title = runnable ? '' : `${c.run.config} is plan-only: run tiny or small`;
    showError(null);
  } catch (e) {
    planBox.replaceChildren();
    runButton.disabled = true;
    showError((e as Error).message);
  }
}

let nextId = 0;
let running: number | null = null;
const bar = h('progress', { max: 1, value: 0 });

function finish(): void {
  running = null;
  cancelButton.hidden = true;
  updatePlan();
}

function onReply(e: MessageEvent<WorkerReply>): void {
  const m = e.data;
  if (m.id !== running) return;
  if (m.type === 'progress') {
    bar.max = m.total;
    bar.value = m.done;
    progressBox.replaceChildren(`run ${m.run}: node ${m.done} / ${m.total} `, bar);
    return;
  }
  finish();
  if (m.type === 'error') {
    progressBox.textContent = 'Run failed.';
    showError(m.message);
    return;
  }
  progressBox.textContent = `Done: run a ${m.report.a.stats.seconds.toFixed(2)} s, run b ${m.report.b.stats.seconds.toFixed(2)} s on the CPU reference.`;
  runBox.replaceChildren(renderRun(m.report));
}

function startWorker(): Worker {
  const w = new Worker(new URL('./run/runWorker.ts', import.meta.url), { type: 'module' });
  w.onmessage = onReply;
  w.onerror = (e) => {
    finish();
    showError(`run worker failed: ${e.message}`);
  };
  return w;
}

let worker = startWorker();

// A full-model run at large T takes minutes and the worker computes synchronously, so the
// only way to stop it is to end the worker and start a fresh one.
cancelButton.addEventListener('click', () => {
  if (running === null) return;
  worker.terminate();
  worker = startWorker();
  finish();
  progressBox.textContent = 'Cancelled.';
});

// the plan builds the forward's graph for its bytes (about a second for flash-next): once typing pauses
let planTimer: ReturnType<typeof setTimeout> | undefined;
form.addEventListener('input', () => {
  clearTimeout(planTimer);
  planTimer = setTimeout(updatePlan, 150);
});
form.addEventListener('submit', (e) => {
  e.preventDefault();
  try {
    const { run } = readControls(raw());
    running = nextId++;
    runButton.disabled = true;
    cancelButton.hidden = false;
    showError(null);
    progressBox.textContent = 'starting...';
    const msg: WorkerRequest = { id: running, request: run };
    worker.postMessage(msg);
  } catch (err) {
    showError((err as Error).message);
  }
});

fillOptions();
updatePlan();
installXcheckPanel(() => {
  const { run } = readControls(raw());
  return { config: run.config, tokens: run.tokens, tp: run.tp, seed: run.seed, reduce: run.a.reduce, sp: run.a.sp };
});
