import { BackendUnavailableError } from '@hcsp/core';
import type { GpuKind } from './rocmDevices.ts';

// The addon's errors carry a code (native/src/host/errors.cc); each becomes its own class so
// callers can tell a wrong shape from an exhausted device without parsing messages.

export class NativeError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'NativeError';
  }
}
export class NativeShapeError extends NativeError {
  override name = 'NativeShapeError';
}
export class NativeDTypeError extends NativeError {
  override name = 'NativeDTypeError';
}
export class NativeAttrError extends NativeError {
  override name = 'NativeAttrError';
}
/** a buffer whose byte length does not match its dtype and shape */
export class NativeSizeError extends NativeError {
  override name = 'NativeSizeError';
}
export class NativeOutOfMemoryError extends NativeError {
  override name = 'NativeOutOfMemoryError';
}
export class NativeUnsupportedError extends NativeError {
  override name = 'NativeUnsupportedError';
}

const CLASSES: Record<string, new (code: string, message: string) => NativeError> = {
  HCSP_SHAPE: NativeShapeError,
  HCSP_DTYPE: NativeDTypeError,
  HCSP_ATTR: NativeAttrError,
  HCSP_SIZE: NativeSizeError,
  HCSP_OOM: NativeOutOfMemoryError,
  HCSP_UNSUPPORTED: NativeUnsupportedError,
  HCSP_RUNTIME: NativeError,
};

/** an error thrown by the addon as its typed class (other errors pass through) */
export function typedNativeError(e: unknown): unknown {
  const code = (e as { code?: unknown })?.code;
  if (!(e instanceof Error) || typeof code !== 'string' || !(code in CLASSES) || e instanceof NativeError) return e;
  return new CLASSES[code](code, e.message);
}

/** calls fn (sync or async), rethrowing the addon's errors as their typed classes */
/** fn(), its native errors typed (native() for a call that returns at once) */
export function nativeSync<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw typedNativeError(e);
  }
}

export async function native<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw typedNativeError(e);
  }
}

/** A GPU device asked for where its runtime library is not found, or sees no device. */
export class GpuRuntimeUnavailableError extends BackendUnavailableError {
  constructor(
    readonly device: GpuKind,
    message: string,
  ) {
    super('rocm', message);
    this.name = 'GpuRuntimeUnavailableError';
  }
}
