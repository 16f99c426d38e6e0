// Newline-delimited JSON messages on a socket, each line bounded: the rendezvous store's
// framing (rendezvousStore.ts). A peer that sends a line over the bound (with or without its
// newline), or a line that is not a JSON message, gets `onBad` and no more of its bytes are
// read: what any process can send to the store costs it at most the bound in memory and one
// look at each byte (a line is searched for its newline once, as it arrives).
import type { Socket } from 'node:net';

export type Message = Record<string, unknown> & { t: string };

export interface JsonLines {
  /** the longest line accepted, newline excluded, in UTF-16 code units (changes apply to the next byte read) */
  maxLine: number;
}

/** reads `socket`'s messages into `onMessage` until it ends or a line is bad (then `onBad` once, and reading stops) */
export function readJsonLines(socket: Socket, maxLine: number, onMessage: (m: Message) => void, onBad: (why: string) => void): JsonLines {
  const bounds: JsonLines = { maxLine };
  let parts: string[] = [];
  let length = 0;
  let bad = false;
  const reject = (why: string): void => {
    bad = true;
    parts = [];
    socket.removeAllListeners('data');
    socket.pause();
    onBad(why);
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    let start = 0;
    for (let nl = chunk.indexOf('\n'); nl >= 0 && !bad; nl = chunk.indexOf('\n', start)) {
      if (length + nl - start > bounds.maxLine) return reject(`a line longer than ${bounds.maxLine} characters`);
      parts.push(chunk.slice(start, nl));
      const line = parts.join('');
      parts = [];
      length = 0;
      start = nl + 1;
      let m: unknown;
      try {
        m = JSON.parse(line);
      } catch {
        return reject(`not a JSON message: ${JSON.stringify(line.slice(0, 80))}`);
      }
      if (typeof m !== 'object' || m === null || typeof (m as Message).t !== 'string') return reject(`not a message: ${JSON.stringify(line.slice(0, 80))}`);
      onMessage(m as Message);
      if (socket.destroyed) return;
    }
    if (bad) return;
    length += chunk.length - start;
    if (length > bounds.maxLine) return reject(`a line longer than ${bounds.maxLine} characters`);
    if (start < chunk.length) parts.push(chunk.slice(start));
  });
  return bounds;
}

/** writes one message (nothing once the socket is gone) */
export function sendJsonLine(socket: Socket, m: Message): void {
  if (!socket.destroyed) socket.write(`${JSON.stringify(m)}\n`);
}
