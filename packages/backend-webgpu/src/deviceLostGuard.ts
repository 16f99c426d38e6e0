/// <reference types="@webgpu/types" />

// Measured in headless Chromium (SwiftShader): device.lost resolves in the same task as the
// rejections a GPU-process crash causes, so a few ms is ample; a real rejection is only
// delayed by this much.
const LOSS_GRACE_MS = 100;

// A lost device never answers again: mapAsync, onSubmittedWorkDone and popErrorScope may
// stay pending forever. Every await on the device goes through race(), so a loss turns
// each pending and later call into an Error naming the reason instead of a hang.
export class DeviceLostGuard {
  private lostError: Error | null = null;
  private uncaptured: string[] = [];
  private readonly lost: Promise<never>;

  constructor(
    device: GPUDevice,
    readonly host: string,
  ) {
    this.lost = device.lost.then((info) => {
      this.lostError = new Error(`webgpu (${host}): device lost (reason '${info.reason}'): ${info.message || 'no message'}`);
      throw this.lostError;
    });
    this.lost.catch(() => {}); // observed through race()/check(); not an unhandled rejection
    // Every operation runs inside an error scope; anything that still escapes is a bug in
    // the executor, and it must fail the run rather than be lost in a log.
    device.addEventListener('uncapturederror', (ev) => {
      this.uncaptured.push((ev as GPUUncapturedErrorEvent).error.message);
    });
  }

  check(): void {
    if (this.lostError) throw this.lostError;
    if (this.uncaptured.length > 0) {
      const messages = this.uncaptured.splice(0);
      throw new Error(`webgpu (${this.host}): uncaptured device error: ${messages.join('; ')}`);
    }
  }

  async race<T>(p: Promise<T>): Promise<T> {
    // observed here even when check() throws first: a lost device rejects p too, and an
    // unobserved rejection would surface as an uncaught page error
    p.catch(() => {});
    this.check();
    let value: T;
    try {
      value = await Promise.race([p, this.lost]);
    } catch (e) {
      // When Chrome's GPU process dies, pending calls reject ("OperationError: Instance
      // dropped in popErrorScope") in the same task as device.lost resolves, but ahead of
      // `lost`'s handler: give the loss a moment so the error names it, not the symptom.
      if (!this.lostError) await Promise.race([this.lost, new Promise((resolve) => setTimeout(resolve, LOSS_GRACE_MS))]).catch(() => {});
      if (this.lostError) throw this.lostError;
      throw e;
    }
    this.check();
    return value;
  }
}
