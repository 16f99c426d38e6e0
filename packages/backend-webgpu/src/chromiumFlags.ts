// Where Chromium lives and the flags that give a headless page WebGPU.

/** Debian's chromium, unless HCSP_CHROMIUM names another executable (read at each launch). */
export function chromiumExecutable(): string {
  return process.env.HCSP_CHROMIUM || '/usr/bin/chromium';
}
// Measured here (architecture.md): navigator.gpu needs --enable-unsafe-webgpu on Linux, and
// an http://127.0.0.1 page (not about:blank); its adapter is SwiftShader.
export const CHROMIUM_WEBGPU_ARGS = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
