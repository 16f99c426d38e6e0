// The job's rendezvous secret: what a process proves it knows before rank 0's rendezvous
// store lets it join (rendezvousStore.ts), so that no other process on the machine or the
// network can join, read or end the job. `hcsp launch` makes one per job and hands it to its
// ranks in their environment (never on a command line, where any user could read it); the
// launchers of a job of several nodes must share one, given to each in HCSP_RENDEZVOUS_SECRET.
// Its value is never printed (messages name the variable and at most its length), and never
// sent: each side of a connection proves it knows the secret with an HMAC of the other side's
// fresh nonce, compared in constant time.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SECRET_ENV = 'HCSP_RENDEZVOUS_SECRET';

/** 32 characters: the 128 bits of `openssl rand -hex 16` */
export const MIN_SECRET_LENGTH = 32;
/** a secret travels in no message, but a rank reads it from its environment: bounded all the same */
const MAX_SECRET_LENGTH = 1024;

/** a new secret for one job: 256 random bits, as hex */
export function newSecret(): string {
  return randomBytes(32).toString('hex');
}

/** `value` as the job's secret, or an error naming the variable and what is wrong (never the value) */
export function checkSecret(value: string): string {
  if (value.length < MIN_SECRET_LENGTH || value.length > MAX_SECRET_LENGTH) {
    throw new Error(
      `${SECRET_ENV} has ${value.length} characters: it needs ${MIN_SECRET_LENGTH} to ${MAX_SECRET_LENGTH} (e.g. export ${SECRET_ENV}=$(openssl rand -hex 32), the same on every node)`,
    );
  }
  return value;
}

/**
 * The secret of the job this launcher starts: HCSP_RENDEZVOUS_SECRET when set (a job of
 * several nodes needs the same one on every node, so it must be given), else a new one.
 */
export function jobSecret(env: Record<string, string | undefined>, nnodes: number): string {
  const given = env[SECRET_ENV];
  if (given !== undefined) return checkSecret(given);
  if (nnodes > 1) {
    throw new Error(
      `--nnodes ${nnodes}: the launchers of a job of several nodes must share its rendezvous secret: set ${SECRET_ENV} to the same value on every node (e.g. export ${SECRET_ENV}=$(openssl rand -hex 32))`,
    );
  }
  return newSecret();
}

/** a fresh nonce for one handshake (a proof made for one connection is worth nothing on another) */
export function newNonce(): string {
  return randomBytes(16).toString('hex');
}

/** HMAC-SHA256 of the parts under the secret: what a side sends to show that it knows the secret without sending it */
export function proof(secret: string, ...parts: (string | number)[]): string {
  return createHmac('sha256', secret).update(parts.join('\n')).digest('hex');
}

/** whether `given` (anything a peer sent) is the `expected` proof, compared in constant time */
export function sameProof(given: unknown, expected: string): boolean {
  if (typeof given !== 'string' || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected));
}
