/**
 * The SSE writer against a real HTTP client over a socket: a client that stops reading holds the
 * producer back (nothing piles up in the gateway), and once it reads again every event arrives, in
 * order, with its id.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { writeSse } from '../../../src/gateway/http/sseWriter';
import { bounded } from './helpers';

// 32 MiB in all: more than the loopback socket buffers on both sides hold.
const EVENTS = 2000;
const DATA = JSON.stringify({ text: 'x'.repeat(16 * 1024) });

describe('writeSse', () => {
  it('waits for a client that stops reading, then delivers every event in order', async (t) => {
    let produced = 0;
    let finished: Promise<void> | undefined;
    const app = express();
    app.get('/events', (_req, res) => {
      async function* rows(): AsyncGenerator<readonly { seq: number }[], void, undefined> {
        for (let seq = 1; seq <= EVENTS; seq++) {
          produced = seq;
          yield [{ seq }];
          await new Promise((r) => setImmediate(r));
        }
      }
      finished = writeSse({
        res,
        abort: new AbortController(),
        items: rows(),
        idOf: (r) => r.seq,
        dataOf: () => DATA,
        errorData: (e) => JSON.stringify({ error: String(e) }),
      });
    });
    const server: Server = await new Promise((r) => {
      const s = app.listen(0, '127.0.0.1', () => r(s));
    });
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    const port = (server.address() as AddressInfo).port;
    const res: IncomingMessage = await new Promise((r) => get(`http://127.0.0.1:${port}/events`, r));
    res.pause();
    // The socket buffers fill and the writer stops asking for more long before the end.
    let before = -1;
    while (produced !== before) {
      before = produced;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(produced < EVENTS / 2, `the writer kept producing for a client that read nothing (${produced} events)`);
    res.setEncoding('utf8');
    let text = '';
    res.on('data', (c: string) => (text += c));
    res.resume();
    await bounded(new Promise((r) => res.once('end', r)), 'the stream to end');
    await bounded(finished ?? Promise.reject(new Error('no stream')), 'the writer to finish');
    const ids = [...text.matchAll(/^id: (\d+)\ndata: (.*)\n\n/gm)].map((m) => {
      assert.equal(m[2], DATA);
      return Number(m[1]);
    });
    assert.deepEqual(
      ids,
      Array.from({ length: EVENTS }, (_, i) => i + 1),
    );
  });
});
