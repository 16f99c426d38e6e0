import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readSizedBody } from './sizedBody.ts';

// readSizedBody on a real Node HTTP server, with raw requests written to a socket: a whole
// body in many chunks, a body cut short by the sender, and a chunked body with no length.

let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = null;
});

/** A server whose one request's body readSizedBody reads; resolves with the body or the error. */
async function serveOne(): Promise<{ port: number; outcome: Promise<Buffer | Error> }> {
  let settle: (v: Buffer | Error) => void = () => {};
  const outcome = new Promise<Buffer | Error>((resolve) => (settle = resolve));
  server = createServer((req, res) => {
    readSizedBody(req, 'test body').then(
      (b) => {
        settle(b);
        res.writeHead(204).end();
      },
      (e: Error) => {
        settle(e);
        res.destroy();
      },
    );
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, outcome };
}

/** Writes `head` then the parts (a pause between them, so they arrive as separate chunks), then ends or destroys the socket. */
async function send(port: number, head: string, parts: Buffer[], end: 'end' | 'destroy'): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(head);
  for (const p of parts) {
    socket.write(p);
    await new Promise((r) => setTimeout(r, 5));
  }
  if (end === 'destroy') socket.destroy();
  else socket.end();
}

function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`hang: nothing settled within ${ms} ms`)), ms)));
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

describe('readSizedBody', () => {
  it('reads a body sent in many chunks into one buffer, byte for byte', async () => {
    const { port, outcome } = await serveOne();
    const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) & 255));
    const parts = [body.subarray(0, 1), body.subarray(1, 65_537), body.subarray(65_537, 200_000), body.subarray(200_000)];
    await send(port, `POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.byteLength}\r\n\r\n`, parts, 'end');
    const got = await bounded(outcome, 5_000);
    expect(got).toBeInstanceOf(Buffer);
    expect((got as Buffer).equals(body)).toBe(true);
  });

  it('a body cut short by the sender rejects naming how many bytes arrived', async () => {
    const { port, outcome } = await serveOne();
    await send(port, 'POST /r HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n', [Buffer.alloc(4096, 1)], 'destroy');
    const got = await bounded(outcome, 5_000);
    expect(got).toBeInstanceOf(Error);
    expect((got as Error).message).toBe('test body: the connection closed after 4096 of 1000000 bytes');
  });

  it('a chunked body (no Content-Length) rejects naming the missing length', async () => {
    const { port, outcome } = await serveOne();
    await send(port, 'POST /r HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n', [], 'end');
    const got = await bounded(outcome, 5_000);
    expect(got).toBeInstanceOf(Error);
    expect((got as Error).message).toBe('test body: Content-Length null is not a byte count');
  });
});
