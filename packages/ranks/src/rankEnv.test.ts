// A rank's environment under hcsp launch (torchrun's variables and hcsp's own): the job's
// rendezvous secret is required, and HCSP_RENDEZVOUS_TIMEOUT is a number of seconds a timer
// can wait; a bad value is one error naming the variable (the secret's value never shown).
import { describe, expect, it } from 'vitest';
import { launchedRank } from './rankEnv.ts';

const secret = 'f'.repeat(64);
const env = (more: Record<string, string | undefined> = {}) => ({
  RANK: '1',
  WORLD_SIZE: '2',
  MASTER_ADDR: '127.0.0.1',
  MASTER_PORT: '29500',
  HCSP_RENDEZVOUS_SECRET: secret,
  ...more,
});

describe('launchedRank', () => {
  it('reads the secret and the timeout (default 300 s)', () => {
    expect(launchedRank(env())).toMatchObject({ rank: 1, worldSize: 2, secret, rendezvousTimeoutMs: 300_000 });
    expect(launchedRank(env({ HCSP_RENDEZVOUS_TIMEOUT: '2.5' }))?.rendezvousTimeoutMs).toBe(2500);
    expect(launchedRank(env({ HCSP_RENDEZVOUS_TIMEOUT: '2147483.647' }))?.rendezvousTimeoutMs).toBe(2 ** 31 - 1);
  });

  it('refuses a timeout a timer cannot wait, naming the value', () => {
    expect(() => launchedRank(env({ HCSP_RENDEZVOUS_TIMEOUT: '2147484' }))).toThrow(
      'HCSP_RENDEZVOUS_TIMEOUT is too large: at most 2147483.647 s (setTimeout\'s limit), got "2147484"',
    );
    expect(() => launchedRank(env({ HCSP_RENDEZVOUS_TIMEOUT: '0' }))).toThrow('HCSP_RENDEZVOUS_TIMEOUT is too small: at least 0.001 s, got "0"');
    expect(() => launchedRank(env({ HCSP_RENDEZVOUS_TIMEOUT: 'Infinity' }))).toThrow(
      'HCSP_RENDEZVOUS_TIMEOUT must be a positive number of seconds, at most 2147483.647 (setTimeout\'s limit), got "Infinity"',
    );
  });

  it("needs the job's secret, long enough, and never shows it", () => {
    expect(() => launchedRank(env({ HCSP_RENDEZVOUS_SECRET: undefined }))).toThrow(
      /^HCSP_RENDEZVOUS_SECRET is unset: a rank proves with it that it belongs to the job/,
    );
    let message = '';
    try {
      launchedRank(env({ HCSP_RENDEZVOUS_SECRET: 'hunter2' }));
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toBe(
      'HCSP_RENDEZVOUS_SECRET has 7 characters: it needs 32 to 1024 (e.g. export HCSP_RENDEZVOUS_SECRET=$(openssl rand -hex 32), the same on every node)',
    );
    expect(message).not.toContain('hunter2');
  });
});
