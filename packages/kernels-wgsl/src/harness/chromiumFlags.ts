// Where Debian's Chromium lives and the flags that give a headless page WebGPU; shared by
// the kernels' test harness and the backend's Chromium device host.
export const CHROMIUM_EXECUTABLE = '/usr/bin/chromium';
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
