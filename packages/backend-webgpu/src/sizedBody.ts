import type { IncomingMessage } from 'node:http';

/**
 * A request body streamed into one buffer of its Content-Length (the page POSTs results as
 * Blobs, which have one), with no concatenation. A missing or bad length (a chunked body), or
 * a body that ends or breaks short of it, rejects with one error naming `what` and how many
 * bytes arrived. HTTP framing by Content-Length never delivers more than it says.
 */
export function readSizedBody(req: IncomingMessage, what: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const header = req.headers['content-length'];
    const length = header === undefined ? NaN : Number(header);
    if (!Number.isSafeInteger(length) || length < 0) {
      req.resume();
      reject(new Error(`${what}: Content-Length ${JSON.stringify(header ?? null)} is not a byte count`));
      return;
    }
    const body = Buffer.allocUnsafe(length);
    let received = 0;
    let settled = false;
    const fail = (why: string): void => {
      if (settled) return;
      settled = true;
      reject(new Error(`${what}: ${why} after ${received} of ${length} bytes`));
    };
    req.on('data', (c: Buffer) => {
      c.copy(body, received);
      received += c.byteLength;
    });
    req.on('end', () => {
      if (received !== length) return fail('the body ended');
      settled = true;
      resolve(body);
    });
    req.on('aborted', () => fail('the connection closed'));
    req.on('error', (e) => fail(`the connection failed (${e.message})`));
    req.on('close', () => fail('the connection closed'));
  });
}
