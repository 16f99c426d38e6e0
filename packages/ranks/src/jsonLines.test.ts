// The rendezvous store's framing: messages split across reads (a character's bytes too) come
// out whole; a line over the bound, with or without its newline, or a line that is not a
// message, stops the reading with one reason.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { readJsonLines, type Message } from './jsonLines.ts';

const closers: (() => void)[] = [];
afterEach(() =>
  closers.splice(0).forEach((c) => {
    c();
  }),
);

/** a connected pair: what the test writes on `writer` is read by readJsonLines on the other end */
async function pair(maxLine: number): Promise<{ writer: Socket; messages: Message[]; bad: Promise<string> }> {
  const messages: Message[] = [];
  let onBad: (why: string) => void = () => {};
  const bad = new Promise<string>((resolve) => (onBad = resolve));
  const server = createServer((s) => {
    s.on('error', () => {});
    readJsonLines(s, maxLine, (m) => messages.push(m), onBad);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const writer = connect({ host: '127.0.0.1', port: (server.address() as AddressInfo).port });
  writer.on('error', () => {});
  await new Promise((resolve) => writer.once('connect', resolve));
  closers.push(() => {
    writer.destroy();
    server.close();
  });
  return { writer, messages, bad };
}

const tick = () => new Promise((r) => setTimeout(r, 30));

describe('readJsonLines', () => {
  it('joins a message split across reads, a multi-byte character included', async () => {
    const { writer, messages } = await pair(100);
    const bytes = Buffer.from('{"t":"set","value":"é€"}\n{"t":"bye"}\n');
    for (const cut of [
      [0, 5],
      [5, 21],
      [21, bytes.length],
    ]) {
      writer.write(bytes.subarray(cut[0], cut[1]));
      await tick();
    }
    expect(messages).toEqual([{ t: 'set', value: 'é€' }, { t: 'bye' }]);
  });

  it('stops at a line over the bound, with or without its newline', async () => {
    for (const text of ['x'.repeat(101), `{"t":"${'x'.repeat(100)}"}\n`]) {
      const { writer, messages, bad } = await pair(100);
      writer.write(text.slice(0, 60));
      await tick();
      writer.write(text.slice(60));
      expect(await bad).toBe('a line longer than 100 characters');
      expect(messages).toEqual([]);
    }
  });

  it('stops at a line that is not a message', async () => {
    for (const [line, why] of [
      ['nope', 'not a JSON message: "nope"'],
      ['[1]', 'not a message: "[1]"'],
      ['{"t":3}', 'not a message: "{\\"t\\":3}"'],
    ]) {
      const { writer, bad } = await pair(100);
      writer.write(`${line}\n`);
      expect(await bad).toBe(why);
    }
  });
});
