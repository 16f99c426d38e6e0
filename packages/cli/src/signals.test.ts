import { afterEach, describe, expect, it, vi } from 'vitest';
import { interruptible, onInterrupt } from './signals.ts';

afterEach(() => vi.restoreAllMocks());

function mockExit() {
  const exits: (number | undefined)[] = [];
  vi.spyOn(process, 'exit').mockImplementation(((code?: number) => void exits.push(code)) as typeof process.exit);
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  return { exits, stderr };
}

describe('interruption', () => {
  it('handlers exist only while a cleanup is registered (the default action stays otherwise)', () => {
    const before = ['SIGINT', 'SIGTERM', 'SIGHUP'].map((s) => process.listenerCount(s));
    const a = onInterrupt(() => {});
    const b = onInterrupt(() => {});
    expect(['SIGINT', 'SIGTERM', 'SIGHUP'].map((s) => process.listenerCount(s))).toEqual(before.map((n) => n + 1));
    a();
    expect(process.listenerCount('SIGINT')).toBe(before[0] + 1);
    b();
    expect(['SIGINT', 'SIGTERM', 'SIGHUP'].map((s) => process.listenerCount(s))).toEqual(before);
  });

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
    ['SIGHUP', 129],
  ] as const) {
    it(`${signal}: cleanups run newest first, "interrupted by ${signal}" is printed, exit ${code}`, () => {
      const { exits, stderr } = mockExit();
      const order: string[] = [];
      onInterrupt(() => order.push('first'));
      onInterrupt(() => {
        order.push('second');
        throw new Error('a failing cleanup does not stop the others');
      });
      process.emit(signal, signal);
      expect(order).toEqual(['second', 'first']);
      expect(stderr).toHaveBeenCalledWith(`hcsp: interrupted by ${signal}\n`);
      expect(exits).toEqual([code]);
      expect(process.listenerCount(signal)).toBe(0);
    });
  }

  it('interruptible releases its handlers when the work ends, also when it fails', async () => {
    await expect(interruptible(async () => 7)).resolves.toBe(7);
    await expect(interruptible(async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(process.listenerCount('SIGTERM')).toBe(0);
  });
});
