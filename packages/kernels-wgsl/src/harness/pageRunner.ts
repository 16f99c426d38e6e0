// The script the harness page runs (plain browser JavaScript, served as /runner.js): it owns
// the GPUDevice, compiles WGSL, and executes a KernelPlan on buffers it fetches from the
// harness server, posting the outputs back. Buffers travel over HTTP as raw bytes because
// page.evaluate would JSON-encode them (megabytes of numbers for the HC shapes).
export const PAGE_RUNNER_JS = String.raw`
let device = null;
const pipelines = new Map();

async function getDevice() {
  if (device) return device;
  if (!navigator.gpu) throw new Error('navigator.gpu is missing on this page');
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('requestAdapter returned null');
  const l = adapter.limits;
  device = await adapter.requestDevice({
    requiredLimits: {
      maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
      maxBufferSize: l.maxBufferSize,
      maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
      maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
      maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
    },
  });
  device.lost.then((info) => console.error('GPU device lost: ' + info.message));
  return device;
}

async function compileErrors(wgsl) {
  const dev = await getDevice();
  const module = dev.createShaderModule({ code: wgsl });
  const info = await module.getCompilationInfo();
  const errs = info.messages.filter((m) => m.type === 'error')
    .map((m) => m.lineNum + ':' + m.linePos + ' ' + m.message);
  if (errs.length) return errs.join('\n');
  dev.pushErrorScope('validation');
  await dev.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } })
    .catch((e) => errs.push(String(e.message || e)));
  const v = await dev.popErrorScope();
  if (v) errs.push(v.message);
  return errs.length ? errs.join('\n') : null;
}

async function getPipeline(key, wgsl) {
  let p = pipelines.get(key);
  if (p) return p;
  const err = await compileErrors(wgsl);
  if (err) throw new Error('WGSL of ' + key + ' does not compile: ' + err);
  const module = device.createShaderModule({ code: wgsl });
  p = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  pipelines.set(key, p);
  return p;
}

function storageBuffer(words) {
  // binding sizes must be non-zero and cover a vec4 element
  const bytes = Math.max(16, Math.ceil(words / 4) * 16);
  return device.createBuffer({ size: bytes,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
}

// job: { plan: {scratch, dispatches: [{key, wgsl, bindings, uniforms(number[]), workgroups}]},
//        inputs: (blobId|null)[], inputWords: number[], outputWords: number[], outputIds: string[],
//        reps: number }   -> { seconds: number[] } (time per rep of the whole plan)
window.hcspRun = async (job) => {
  const dev = await getDevice();
  const bufs = { input: [], output: [], scratch: new Map() };
  for (let i = 0; i < job.inputs.length; i++) {
    if (job.inputs[i] === null) { bufs.input.push(null); continue; }
    const bytes = await (await fetch('/blob/' + job.inputs[i])).arrayBuffer();
    const b = storageBuffer(job.inputWords[i]);
    dev.queue.writeBuffer(b, 0, bytes);
    bufs.input.push(b);
  }
  for (const w of job.outputWords) bufs.output.push(storageBuffer(w));
  for (const s of job.plan.scratch) bufs.scratch.set(s.name, storageBuffer(s.words));
  const steps = [];
  for (const d of job.plan.dispatches) {
    const pipeline = await getPipeline(d.key, d.wgsl);
    const entries = d.bindings.map((b, i) => {
      const t = b.target;
      const buffer = t.kind === 'scratch' ? bufs.scratch.get(t.name) : bufs[t.kind][t.port];
      if (!buffer) throw new Error('dispatch ' + d.key + ': binding ' + i + ' has no buffer');
      return { binding: i, resource: { buffer } };
    });
    if (d.uniforms.length) {
      const u = dev.createBuffer({ size: Math.max(16, Math.ceil(d.uniforms.length / 4) * 16),
        usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      dev.queue.writeBuffer(u, 0, new Uint32Array(d.uniforms));
      entries.push({ binding: entries.length, resource: { buffer: u } });
    }
    dev.pushErrorScope('validation');
    const group = dev.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
    const e = await dev.popErrorScope();
    if (e) throw new Error('dispatch ' + d.key + ': ' + e.message);
    steps.push({ pipeline, group, workgroups: d.workgroups });
  }
  await dev.queue.onSubmittedWorkDone();
  const seconds = [];
  for (let r = 0; r < job.reps; r++) {
    const t0 = performance.now();
    dev.pushErrorScope('validation');
    const enc = dev.createCommandEncoder();
    for (const s of steps) {
      const pass = enc.beginComputePass();
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, s.group);
      pass.dispatchWorkgroups(s.workgroups[0], s.workgroups[1], s.workgroups[2]);
      pass.end();
    }
    dev.queue.submit([enc.finish()]);
    await dev.queue.onSubmittedWorkDone();
    const e = await dev.popErrorScope();
    if (e) throw new Error('run: ' + e.message);
    seconds.push((performance.now() - t0) / 1000);
  }
  for (let i = 0; i < job.outputWords.length; i++) {
    const bytes = job.outputWords[i] * 4;
    const staging = dev.createBuffer({ size: Math.max(4, bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    enc.copyBufferToBuffer(bufs.output[i], 0, staging, 0, Math.max(4, bytes));
    dev.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const data = staging.getMappedRange().slice(0, bytes);
    staging.unmap();
    staging.destroy();
    await fetch('/blob/' + job.outputIds[i], { method: 'POST', body: data });
  }
  for (const b of [...bufs.input, ...bufs.output, ...bufs.scratch.values()]) if (b) b.destroy();
  return { seconds };
};

window.hcspCompileErrors = async (wgsl) => compileErrors(wgsl);
window.hcspAdapterInfo = async () => {
  const a = await navigator.gpu.requestAdapter();
  const i = a.info || {};
  return [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' / ');
};
`;
