import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

/** What a child process found when it asked dawn.node for an adapter. */
export type DawnProbeResult = { kind: 'adapter'; description: string; software: boolean } | { kind: 'no-adapter' } | { kind: 'failed'; message: string };

const PROBE_TIMEOUT_MS = 30_000;

/**
 * Asks dawn.node for an adapter in a child process before this process loads it (as
 * node-llama-cpp probes its native binary): a driver that crashes or hangs takes only the
 * child down, and the Vulkan loader's and Dawn's own stderr chatter about rejected drivers
 * stays out of the user's terminal.
 */
export function probeDawnAdapter(): Promise<DawnProbeResult> {
  let moduleUrl: string;
  try {
    moduleUrl = pathToFileURL(createRequire(import.meta.url).resolve('webgpu')).href;
  } catch (e) {
    return Promise.resolve({ kind: 'failed', message: `npm package 'webgpu' not found: ${(e as Error).message}` });
  }
  const script = `
    const { create } = await import(${JSON.stringify(moduleUrl)});
    const a = await create([]).requestAdapter({ powerPreference: 'high-performance' });
    if (!a) { process.stdout.write(JSON.stringify({ kind: 'no-adapter' })); process.exit(0); }
    const i = a.info;
    const text = [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' ');
    const software = i.isFallbackAdapter === true || /swiftshader|llvmpipe|lavapipe|software|\\bcpu\\b/i.test(text);
    process.stdout.write(JSON.stringify({ kind: 'adapter', description: text || 'unknown adapter', software }));
    process.exit(0);`;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), PROBE_TIMEOUT_MS);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      try {
        resolve(JSON.parse(out) as DawnProbeResult);
      } catch {
        const how = signal
          ? `was killed by ${signal}${signal === 'SIGKILL' ? ` (no answer in ${PROBE_TIMEOUT_MS / 1000} s)` : ''}`
          : `exited with code ${code}`;
        resolve({ kind: 'failed', message: `the dawn.node probe ${how}: ${err.trim().split('\n').slice(-3).join(' | ')}` });
      }
    });
  });
}
