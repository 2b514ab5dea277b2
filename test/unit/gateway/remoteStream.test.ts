/**
 * The proxy's own SSE reader for A2A 1.0 remotes (remoteStream.ts), against raw `node:http` servers
 * written here so every byte (and where the stream is cut) is under the test's control.
 */
import { describe, it } from 'node:test';
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SendMessageRequest } from '@a2a-js/sdk';
import {
  A2AError,
  ERROR_INFO_TYPE,
  A2A_ERROR_DOMAIN,
  JsonRpcTransportError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import { remoteStream, remoteStreamBatches } from '../../../src/gateway/remoteStream';
import type { RemoteCall, RemoteEndpoint, RemoteEvent } from '../../../src/gateway/remoteStream';
import { toWireEvent, wireKind } from '../../../src/gateway/eventLog';
import type { Json, WireEvent } from '../../../src/gateway/eventLog';
import { bounded } from './helpers';

interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

interface TestServer {
  readonly url: string;
  readonly requests: SeenRequest[];
  /** TCP connections accepted (a request that was never made opens none). */
  connections: number;
  /** Resolves when the socket of the first request closes. */
  readonly firstSocketClosed: Promise<void>;
}

/** A raw HTTP server on 127.0.0.1:0, closed (with its connections) when the test ends. */
async function serve(t: TestContext, handler: Handler): Promise<TestServer> {
  let socketClosed!: () => void;
  const s: TestServer = {
    url: '',
    requests: [],
    connections: 0,
    firstSocketClosed: new Promise<void>((r) => (socketClosed = r)),
  };
  const server = createServer((req, res) => {
    if (s.requests.length === 0) req.socket.once('close', () => socketClosed());
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      s.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      void Promise.resolve(handler(req, res, body)).catch(() => res.destroy());
    });
  });
  server.on('connection', (sock: Socket) => {
    s.connections++;
    sock.setNoDelay(true);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return Object.assign(s, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

/** Reads the whole stream: the events in order, then how it ended (undefined: ended quietly). */
async function drain(gen: AsyncGenerator<WireEvent>): Promise<{ events: WireEvent[]; error: unknown }> {
  const events: WireEvent[] = [];
  try {
    for (;;) {
      const r = await bounded(gen.next(), 'next event');
      if (r.done) return { events, error: undefined };
      events.push(r.value);
    }
  } catch (e) {
    await gen.return(undefined).catch(() => undefined);
    return { events, error: e };
  }
}

const pause = (ms = 2): Promise<void> => new Promise((r) => setTimeout(r, ms));

function writeAsync(res: ServerResponse, chunk: Buffer | string): Promise<void> {
  return new Promise((resolve, reject) => res.write(chunk, (e) => (e ? reject(e) : resolve())));
}

function sseHead(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
  res.flushHeaders();
}

function endpoint(
  url: string,
  binding: RemoteEndpoint['binding'] = 'JSONRPC',
  headers: Record<string, string> = { Authorization: 'Bearer remote-secret' },
): RemoteEndpoint {
  return { url, binding, headers: () => ({ ...headers }) };
}

const params = SendMessageRequest.fromJSON({
  message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hello é€😀' }] },
});
const SEND: RemoteCall = { kind: 'send', params };

function ctl(t: TestContext): AbortSignal {
  const c = new AbortController();
  t.after(() => c.abort());
  return c.signal;
}

// Well-formed wire events (they pass toWireEvent unchanged, so what arrives must deep-equal them).
const statusUpdate = (n: number, text = `step ${n}`): Json => ({
  statusUpdate: {
    taskId: 'task-1',
    contextId: 'ctx-1',
    status: { state: 'TASK_STATE_WORKING', message: { messageId: `s${n}`, role: 'ROLE_AGENT', parts: [{ text }] } },
  },
});
const taskEvent: Json = {
  task: { id: 'task-1', contextId: 'ctx-1', status: { state: 'TASK_STATE_SUBMITTED' }, history: [] },
};
const artifactEvent = (text: string): Json => ({
  artifactUpdate: {
    taskId: 'task-1',
    contextId: 'ctx-1',
    artifact: { artifactId: 'a1', parts: [{ text }] },
    append: false,
  },
});

const rpcIdOf = (body: string): unknown => (JSON.parse(body) as Json).id;
const envelope = (id: unknown, result: Json): string => JSON.stringify({ jsonrpc: '2.0', id, result });

const notFoundInfo = { '@type': ERROR_INFO_TYPE, reason: 'TASK_NOT_FOUND', domain: A2A_ERROR_DOMAIN };

describe('remoteStream: JSON-RPC binding', () => {
  it('reassembles events cut at awkward points (mid-line, between CR and LF, inside a UTF-8 character, data: with and without a space, comments, id:, multi-line data) plus a 1 MiB event in small chunks', async (t) => {
    const big = artifactEvent(`${'x€é😀'.repeat((1024 * 1024) / 10)}end`);
    const sent = [
      taskEvent,
      statusUpdate(1, 'ünïcödé ✓'),
      statusUpdate(2),
      statusUpdate(3),
      statusUpdate(4),
      big,
      statusUpdate(5),
    ];
    const srv = await serve(t, async (_req, res, body) => {
      const id = rpcIdOf(body);
      const [e0, e1, e2, e3, e4, e5, e6] = sent.map((r) => envelope(id, r));
      const half = e3.indexOf('"result"'); // a raw newline may only go between JSON tokens
      const text =
        ': keep-alive\r\n\r\n' +
        `id: 1\r\ndata: ${e0}\r\n\r\n` +
        `data:${e1}\n\n` +
        ': keep-alive\n' +
        `event: message\nid: 3\ndata: ${e2}\r\n\r\n` +
        // One event over two data lines (joined with a newline, which is JSON whitespace).
        `data: ${e3.slice(0, half)}\ndata: ${e3.slice(half)}\n\n` +
        `retry: 1000\ndata: ${e4}\r\n\r\n` +
        `data: ${e5}\n\n` +
        `data: ${e6}\r\n\r\n`;
      const bytes = Buffer.from(text, 'utf8');
      // Cut points chosen by content, so each awkward split really happens in the bytes.
      const cuts = new Set<number>();
      const at = (needle: string, from = 0, plus = 0): void => {
        const i = bytes.indexOf(needle, from, 'utf8');
        assert.ok(i >= 0, `fixture lacks ${needle}`);
        cuts.add(i + plus);
      };
      at('\r\n', 0, 1); // between CR and LF
      at('data: ', 0, 3); // inside "data:"
      at('data: ', 0, 5); // between "data:" and its space
      at('"jsonrpc"', 0, 4); // inside the JSON of a line
      at('ü', 0, 1); // inside a two-byte character
      at('\r\n\r\n', bytes.indexOf(`data: ${e2.slice(0, 10)}`), 1); // CR | LF CR LF
      at('\r\n\r\n', bytes.indexOf(`data: ${e2.slice(0, 10)}`), 3); // CR LF CR | LF
      at('\ndata: ', bytes.indexOf(`data: ${e3.slice(0, 10)}`), 1); // between the two data lines of one event
      at('\n\n', bytes.indexOf(`data: ${e3.slice(0, 10)}`), 1); // between the two LFs ending an event
      const bigStart = bytes.indexOf(`data: ${e5.slice(0, 20)}`);
      const bigEnd = bytes.indexOf('\n\n', bigStart);
      for (let i = bigStart + 7; i < bigEnd; i += 8191) cuts.add(i); // the big event in ~8 KiB pieces
      const euro = bytes.indexOf('😀', bigStart);
      cuts.add(euro + 1);
      cuts.add(euro + 3); // inside a four-byte character
      cuts.add(bigEnd + 1);
      sseHead(res);
      let prev = 0;
      for (const c of [...cuts].sort((a, b) => a - b)) {
        await writeAsync(res, bytes.subarray(prev, c));
        prev = c;
        await pause(1); // separate reads on the client (not asserted: only makes the splits likely)
      }
      await writeAsync(res, bytes.subarray(prev));
      res.end();
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.equal(error, undefined, `stream ended with ${String(error)}`);
    assert.equal(events.length, sent.length);
    for (let i = 0; i < sent.length; i++) assert.deepEqual(events[i], sent[i], `event ${i}`);

    assert.equal(srv.requests.length, 1);
    const req = srv.requests[0];
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/');
    const rpc = JSON.parse(req.body) as Json;
    assert.equal(rpc.jsonrpc, '2.0');
    assert.equal(rpc.method, 'SendStreamingMessage');
    assert.deepEqual(rpc.params, SendMessageRequest.toJSON(params));
    assert.equal(req.headers['a2a-version'], '1.0');
    assert.equal(req.headers.accept, 'text/event-stream');
    assert.equal(req.headers.authorization, 'Bearer remote-secret');
  });

  it('subscribe sends SubscribeToTask with the task id', async (t) => {
    const srv = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(`data: ${envelope(rpcIdOf(body), statusUpdate(1))}\n\n`);
    });
    const { events, error } = await drain(
      remoteStream(endpoint(srv.url), { kind: 'subscribe', taskId: 'task-1' }, ctl(t)),
    );
    assert.equal(error, undefined);
    assert.deepEqual(events, [statusUpdate(1)]);
    const rpc = JSON.parse(srv.requests[0].body) as Json;
    assert.equal(rpc.method, 'SubscribeToTask');
    assert.deepEqual(rpc.params, { id: 'task-1' });
  });

  it('an event for another JSON-RPC id throws', async (t) => {
    const srv = await serve(t, async (_req, res, body) => {
      const id = rpcIdOf(body) as number;
      sseHead(res);
      await writeAsync(res, `data: ${envelope(id, statusUpdate(1))}\n\n`);
      await pause();
      res.end(`data: ${envelope(id + 1000, statusUpdate(2))}\n\n`);
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, [statusUpdate(1)]);
    assert.ok(error instanceof Error);
    assert.match(error.message, /JSON-RPC id/);
  });

  it('an error envelope mid-stream throws the SDK error class for its code', async (t) => {
    const srv = await serve(t, async (_req, res, body) => {
      const id = rpcIdOf(body);
      sseHead(res);
      await writeAsync(res, `data: ${envelope(id, statusUpdate(1))}\n\n`);
      await pause();
      res.end(
        `data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32001, message: 'task task-1 is gone', data: [notFoundInfo] } })}\n\n`,
      );
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, [statusUpdate(1)]);
    assert.ok(error instanceof TaskNotFoundError, `got ${String(error)}`);
    assert.equal(error.message, 'task task-1 is gone');
    assert.equal((error as TaskNotFoundError & { envelopeCode: number }).envelopeCode, -32001);
  });

  it('an unknown error code mid-stream throws the SDK JsonRpcTransportError', async (t) => {
    const srv = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(
        `data: ${JSON.stringify({ jsonrpc: '2.0', id: rpcIdOf(body), error: { code: -31999, message: 'odd' } })}\n\n`,
      );
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, []);
    assert.ok(error instanceof JsonRpcTransportError, `got ${String(error)}`);
    assert.equal(error.envelopeCode, -31999);
  });

  it('events that arrive in the same chunk as an error envelope are still delivered before the error', async (t) => {
    const srv = await serve(t, (_req, res, body) => {
      const id = rpcIdOf(body);
      sseHead(res);
      // One write: the events and the error reach the reader together.
      res.end(
        `data: ${envelope(id, statusUpdate(1))}\n\ndata: ${envelope(id, statusUpdate(2))}\n\n` +
          `data: ${JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32004, message: 'no more' } })}\n\n`,
      );
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.ok(error instanceof UnsupportedOperationError, `got ${String(error)}`);
    assert.deepEqual(events, [statusUpdate(1), statusUpdate(2)]);
  });

  it('a non-stream JSON-RPC error answer throws the mapped SDK error before any event', async (t) => {
    const srv = await serve(t, (_req, res, body) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ jsonrpc: '2.0', id: rpcIdOf(body), error: { code: -32001, message: 'Task not found: t9' } }),
      );
    });
    const gen = remoteStream(endpoint(srv.url), { kind: 'subscribe', taskId: 't9' }, ctl(t));
    await assert.rejects(
      bounded(gen.next(), 'first event'),
      (e: unknown) => e instanceof TaskNotFoundError && e.message === 'Task not found: t9',
    );
  });

  it('HTTP 500 with a plain body throws an Error naming the status', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('backend exploded');
    });
    const gen = remoteStream(endpoint(srv.url), SEND, ctl(t));
    await assert.rejects(
      bounded(gen.next(), 'first event'),
      (e: unknown) =>
        e instanceof Error &&
        !(e instanceof A2AError) &&
        /HTTP 500/.test(e.message) &&
        /backend exploded/.test(e.message),
    );
  });

  it('HTTP 200 that is not an event stream and not an error throws, naming what came', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<html>login</html>');
    });
    const gen = remoteStream(endpoint(srv.url), SEND, ctl(t));
    await assert.rejects(bounded(gen.next(), 'first event'), /expected an event stream, got text\/html/);
  });

  it('a redirect is refused and never followed (the credentials stay home)', async (t) => {
    const elsewhere = await serve(t, (_req, res) => {
      sseHead(res);
      res.end(`data: ${envelope(1, statusUpdate(1))}\n\n`);
    });
    const srv = await serve(t, (_req, res) => {
      res.writeHead(302, { Location: `${elsewhere.url}/a2a` });
      res.end();
    });
    const gen = remoteStream(endpoint(srv.url), SEND, ctl(t));
    await assert.rejects(
      bounded(gen.next(), 'first event'),
      (e: unknown) =>
        e instanceof Error &&
        /redirect/.test(e.message) &&
        /HTTP 302/.test(e.message) &&
        e.message.includes(elsewhere.url),
    );
    assert.equal(srv.requests.length, 1);
    assert.equal(elsewhere.connections, 0);
    assert.equal(elsewhere.requests.length, 0);
  });

  it('the connection dropped mid-event throws (it must not end quietly)', async (t) => {
    const srv = await serve(t, async (_req, res, body) => {
      const id = rpcIdOf(body);
      sseHead(res);
      const second = `data: ${envelope(id, statusUpdate(2))}\n\n`;
      await writeAsync(res, `data: ${envelope(id, statusUpdate(1))}\n\n${second.slice(0, second.length >> 1)}`);
      await pause(20);
      res.socket?.destroy();
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, [statusUpdate(1)]);
    assert.ok(error instanceof Error, 'the stream ended quietly');
  });

  it('the connection dropped between events throws too', async (t) => {
    const srv = await serve(t, async (_req, res, body) => {
      sseHead(res);
      await writeAsync(res, `data: ${envelope(rpcIdOf(body), statusUpdate(1))}\n\n`);
      await pause(20);
      res.socket?.destroy();
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, [statusUpdate(1)]);
    assert.ok(error instanceof Error, 'the stream ended quietly');
  });

  it('a response that ends cleanly in the middle of an event throws; one that ends between events ends quietly', async (t) => {
    const cut = await serve(t, (_req, res, body) => {
      sseHead(res);
      const ev = `data: ${envelope(rpcIdOf(body), statusUpdate(1))}`;
      res.end(ev.slice(0, ev.length - 5));
    });
    const a = await drain(remoteStream(endpoint(cut.url), SEND, ctl(t)));
    assert.deepEqual(a.events, []);
    assert.ok(a.error instanceof Error);
    assert.match(a.error.message, /not JSON/);

    const whole = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(`data: ${envelope(rpcIdOf(body), statusUpdate(1))}\n\n: bye\n`);
    });
    const b = await drain(remoteStream(endpoint(whole.url), SEND, ctl(t)));
    assert.equal(b.error, undefined);
    assert.deepEqual(b.events, [statusUpdate(1)]);
  });

  for (const shape of ['one data line', 'many data lines'] as const) {
    it(`an event over 4 MiB throws (${shape})`, async (t) => {
      const srv = await serve(t, async (_req, res, body) => {
        sseHead(res);
        const ev = envelope(rpcIdOf(body), artifactEvent('y'.repeat(4 * 1024 * 1024 + 100)));
        const text =
          shape === 'one data line'
            ? `data: ${ev}\n\n`
            : `${ev
                .match(/.{1,65536}/g)!
                .map((l) => `data: ${l}\n`)
                .join('')}\n`;
        const bytes = Buffer.from(text);
        for (let i = 0; i < bytes.length && !res.destroyed; i += 256 * 1024)
          await writeAsync(res, bytes.subarray(i, i + 256 * 1024));
        res.end();
      });
      const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
      assert.deepEqual(events, []);
      assert.ok(error instanceof Error);
      assert.match(error.message, /over 4194304 bytes/);
    });
  }

  it('an event just under 4 MiB still arrives', async (t) => {
    const ev = artifactEvent('z'.repeat(4 * 1024 * 1024 - 1024));
    const srv = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(`data: ${envelope(rpcIdOf(body), ev)}\n\n`);
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.equal(error, undefined);
    assert.deepEqual(events, [ev]);
  });

  it('the request carries the endpoint headers and nothing else that could be a credential', async (t) => {
    let calls = 0;
    const srv = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(`data: ${envelope(rpcIdOf(body), statusUpdate(1))}\n\n`);
    });
    const ep: RemoteEndpoint = {
      url: srv.url,
      binding: 'JSONRPC',
      headers: () => (calls++, { Authorization: 'Bearer remote-secret', 'X-Api-Key': 'k-123' }),
    };
    const { error } = await drain(remoteStream(ep, SEND, ctl(t)));
    assert.equal(error, undefined);
    assert.equal(calls, 1);
    const h = srv.requests[0].headers;
    assert.equal(h.authorization, 'Bearer remote-secret');
    assert.equal(h['x-api-key'], 'k-123');
    assert.equal(h['a2a-version'], '1.0');
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h['content-length'], String(Buffer.byteLength(srv.requests[0].body)));
    const allowed = new Set([
      'host',
      'connection',
      'authorization',
      'x-api-key',
      'a2a-version',
      'accept',
      'content-type',
      'content-length',
    ]);
    assert.deepEqual(
      Object.keys(h).filter((k) => !allowed.has(k)),
      [],
    );
  });

  it('aborting the signal stops the stream and closes the connection', async (t) => {
    let sentSecond = false;
    const srv = await serve(t, async (_req, res, body) => {
      sseHead(res);
      await writeAsync(res, `data: ${envelope(rpcIdOf(body), statusUpdate(1))}\n\n`);
      // Keeps the stream open (a remote still working); the test aborts.
      await new Promise<void>((r) => res.once('close', r));
      sentSecond = !res.destroyed && res.write('data: late\n\n');
    });
    const c = new AbortController();
    t.after(() => c.abort());
    const gen = remoteStream(endpoint(srv.url), SEND, c.signal);
    const first = await bounded(gen.next(), 'first event');
    assert.deepEqual(first, { done: false, value: statusUpdate(1) });
    const next = gen.next();
    c.abort();
    const outcome = await bounded(
      next.then(
        (r) => ({ done: r.done, error: undefined as unknown }),
        (e: unknown) => ({ done: true, error: e }),
      ),
      'the stream after abort',
    );
    assert.equal(outcome.done, true);
    if (outcome.error !== undefined) {
      // Mid-stream, Node destroys the response with a plain "aborted" ECONNRESET error (not an
      // AbortError); callers tell it from a remote failure by their signal (the relay does).
      const e = outcome.error as NodeJS.ErrnoException;
      assert.ok(e.name === 'AbortError' || (e.code === 'ECONNRESET' && e.message === 'aborted'), `got ${String(e)}`);
    }
    await bounded(srv.firstSocketClosed, 'the server to see the connection close');
    assert.equal(sentSecond, false);
  });

  it('aborting before the remote answers rejects with an AbortError', async (t) => {
    const srv = await serve(t, () => undefined); // never answers
    const c = new AbortController();
    const gen = remoteStream(endpoint(srv.url), SEND, c.signal);
    const first = gen.next();
    while (srv.requests.length === 0) await bounded(pause(5), 'the request to arrive');
    c.abort();
    await assert.rejects(bounded(first, 'first event'), (e: unknown) => (e as Error).name === 'AbortError');
    await bounded(srv.firstSocketClosed, 'the server to see the connection close');
  });
});

describe('remoteStream: HTTP+JSON binding', () => {
  it('send POSTs <url>/message:stream with the request JSON; events are plain StreamResponse JSON', async (t) => {
    const sent = [taskEvent, statusUpdate(1), artifactEvent('patch'), statusUpdate(2)];
    const srv = await serve(t, async (_req, res) => {
      sseHead(res);
      for (const ev of sent) {
        const line = `data: ${JSON.stringify(ev)}\r\n\r\n`;
        await writeAsync(res, line.slice(0, 9));
        await pause(1);
        await writeAsync(res, line.slice(9));
      }
      res.end();
    });
    const { events, error } = await drain(
      remoteStream(endpoint(`${srv.url}/api/v1/`, 'HTTP+JSON', { 'X-Remote-Key': 'rk' }), SEND, ctl(t)),
    );
    assert.equal(error, undefined);
    assert.deepEqual(events, sent);
    const req = srv.requests[0];
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/api/v1/message:stream');
    assert.deepEqual(JSON.parse(req.body), SendMessageRequest.toJSON(params));
    assert.equal(req.headers['a2a-version'], '1.0');
    assert.equal(req.headers['x-remote-key'], 'rk');
    assert.equal(req.headers.authorization, undefined);
  });

  it('subscribe POSTs <url>/tasks/<id>:subscribe with an empty body', async (t) => {
    const srv = await serve(t, (_req, res) => {
      sseHead(res);
      res.end(`data: ${JSON.stringify(statusUpdate(7))}\n\n`);
    });
    const { events, error } = await drain(
      remoteStream(endpoint(`${srv.url}/api`, 'HTTP+JSON'), { kind: 'subscribe', taskId: 'task 1/x' }, ctl(t)),
    );
    assert.equal(error, undefined);
    assert.deepEqual(events, [statusUpdate(7)]);
    const req = srv.requests[0];
    assert.equal(req.method, 'POST');
    assert.equal(req.url, '/api/tasks/task%201%2Fx:subscribe');
    assert.equal(req.body, '');
    assert.equal(req.headers['content-length'], '0');
    assert.equal(req.headers['a2a-version'], '1.0');
    assert.equal(req.headers.authorization, 'Bearer remote-secret');
  });

  it('an `event: error` throws through fromRestErrorBody (the SDK class for its reason)', async (t) => {
    const srv = await serve(t, async (_req, res) => {
      sseHead(res);
      await writeAsync(res, `data: ${JSON.stringify(statusUpdate(1))}\n\n`);
      await pause();
      res.end(
        `event: error\ndata: ${JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'task went away', details: [notFoundInfo] } })}\n\n`,
      );
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url, 'HTTP+JSON'), SEND, ctl(t)));
    assert.deepEqual(events, [statusUpdate(1)]);
    assert.ok(error instanceof TaskNotFoundError, `got ${String(error)}`);
    assert.equal(error.message, 'task went away');
  });

  it('an `event: error` without an error object throws a plain Error', async (t) => {
    const srv = await serve(t, (_req, res) => {
      sseHead(res);
      res.end('event: error\ndata: "boom"\n\n');
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url, 'HTTP+JSON'), SEND, ctl(t)));
    assert.deepEqual(events, []);
    assert.ok(error instanceof Error);
    assert.match(error.message, /error event: "boom"/);
  });

  it('a non-stream REST error answer throws the SDK error with the HTTP status', async (t) => {
    const srv = await serve(t, (_req, res) => {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ error: { code: 404, status: 'NOT_FOUND', message: 'no task t9', details: [notFoundInfo] } }),
      );
    });
    const gen = remoteStream(endpoint(srv.url, 'HTTP+JSON'), { kind: 'subscribe', taskId: 't9' }, ctl(t));
    await assert.rejects(
      bounded(gen.next(), 'first event'),
      (e: unknown) =>
        e instanceof TaskNotFoundError &&
        e.message === 'no task t9' &&
        (e as TaskNotFoundError & { statusCode: number }).statusCode === 404,
    );
  });
});

describe('remoteStream: the text of each event as received (stored and relayed as it came)', () => {
  async function batches(gen: AsyncGenerator<readonly RemoteEvent[]>): Promise<RemoteEvent[]> {
    const out: RemoteEvent[] = [];
    for (;;) {
      const r = await bounded(gen.next(), 'next batch');
      if (r.done) return out;
      out.push(...r.value);
    }
  }

  it('JSON-RPC: the result text inside the SDK framing is kept byte for byte; other framings are parsed whole and keep none', async (t) => {
    // Text no serialiser of ours would produce: escapes, an unknown member, members out of order.
    const odd =
      '{"statusUpdate":{"status":{"state":"TASK_STATE_WORKING"},"taskId":"task-1","contextId":"ctx-1","x-vendor":[1,2.50,"\\u00e9\\n"]}}';
    const srv = await serve(t, async (_req, res, body) => {
      const id = JSON.stringify(rpcIdOf(body));
      sseHead(res);
      await writeAsync(res, `data: {"jsonrpc":"2.0","id":${id},"result":${odd}}\n\n`);
      // The same event framed with spaces: not the SDK's framing, parsed whole.
      await writeAsync(res, `data: { "jsonrpc": "2.0", "id": ${id}, "result": ${odd} }\n\n`);
      // A second "result" member: the framing matches but the text after it is not one value; JSON
      // reading takes the last member, and that is what must be stored, not the first one's text.
      await writeAsync(
        res,
        `data: {"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(statusUpdate(1))},"result":${JSON.stringify(statusUpdate(2))}}\n\n`,
      );
      // Over two data lines: the text has a newline in it, so it is serialised again.
      await writeAsync(
        res,
        `data: {"jsonrpc":"2.0","id":${id},"result":\ndata: ${JSON.stringify(statusUpdate(3))}}\n\n`,
      );
      // Not well-formed (a numeric state): normalised by the SDK's reading, so the text is not kept.
      res.end(
        `data: {"jsonrpc":"2.0","id":${id},"result":{"statusUpdate":{"taskId":"task-1","status":{"state":3}}}}\n\n`,
      );
    });
    const got = await batches(remoteStreamBatches(endpoint(srv.url), SEND, ctl(t)));
    assert.equal(got.length, 5);
    assert.equal(got[0].raw, odd);
    assert.deepEqual(got[0].ev, JSON.parse(odd));
    assert.equal(got[1].raw, undefined);
    assert.deepEqual(got[1].ev, JSON.parse(odd));
    assert.equal(got[2].raw, undefined);
    assert.deepEqual(got[2].ev, statusUpdate(2));
    assert.equal(got[3].raw, undefined);
    assert.deepEqual(got[3].ev, statusUpdate(3));
    assert.equal(got[4].raw, undefined);
    assert.deepEqual(got[4].ev, { statusUpdate: { taskId: 'task-1', status: { state: 'TASK_STATE_COMPLETED' } } });
  });

  it('JSON-RPC: a response for another id in the SDK framing is still refused', async (t) => {
    const srv = await serve(t, (_req, res, body) => {
      sseHead(res);
      res.end(
        `data: {"jsonrpc":"2.0","id":${JSON.stringify(`${String(rpcIdOf(body))}0`)},"result":${JSON.stringify(statusUpdate(1))}}\n\n`,
      );
    });
    const { events, error } = await drain(remoteStream(endpoint(srv.url), SEND, ctl(t)));
    assert.deepEqual(events, []);
    assert.ok(error instanceof Error);
    assert.match(error.message, /JSON-RPC id/);
  });

  it('HTTP+JSON: the data text is kept when it is one line and well-formed', async (t) => {
    const odd = '{"artifactUpdate":{"artifact":{"parts":[{"text":"caf\\u00e9"}],"artifactId":"a1"},"taskId":"task-1"}}';
    const srv = await serve(t, (_req, res) => {
      sseHead(res);
      res.end(`data: ${odd}\r\n\r\ndata: {"statusUpdate":\ndata: ${JSON.stringify(statusUpdate(1).statusUpdate)}}\n\n`);
    });
    const got = await batches(remoteStreamBatches(endpoint(srv.url, 'HTTP+JSON'), SEND, ctl(t)));
    assert.deepEqual(
      got.map((e) => e.raw),
      [odd, undefined],
    );
    assert.deepEqual(got[1].ev, statusUpdate(1));
  });
});

describe('toWireEvent', () => {
  it('returns a well-formed event as the very same object', () => {
    for (const ev of [
      statusUpdate(1),
      taskEvent,
      artifactEvent('a'),
      { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'hi' }] } },
    ]) {
      assert.equal(toWireEvent(ev), ev);
    }
  });

  it('normalises what the SDK can read and refuses what it cannot, always to one kind or undefined', () => {
    // A status that is not an object is read the way the SDK reads it: an empty status.
    assert.deepEqual(toWireEvent({ statusUpdate: { status: 'bogus' } }), { statusUpdate: { status: {} } });
    // A numeric state is not the wire's enum name: normalised through the SDK's enum reading.
    assert.deepEqual(toWireEvent({ statusUpdate: { taskId: 't', status: { state: 42 } } }), {
      statusUpdate: { taskId: 't', status: { state: 'UNRECOGNIZED' } },
    });
    assert.equal(toWireEvent({}), undefined);
    assert.equal(toWireEvent({ foo: 1 }), undefined);
    assert.equal(toWireEvent({ statusUpdate: null }), undefined);
    assert.equal(toWireEvent('text'), undefined);
    assert.equal(toWireEvent([statusUpdate(1)]), undefined);
    // Two kinds at once: not passed through; the SDK's reading keeps one of them.
    const two = { ...statusUpdate(1), task: { id: 'x' } };
    const normal = toWireEvent(two);
    assert.notEqual(normal, two);
    assert.deepEqual(normal, { task: { id: 'x' } });

    const inputs: unknown[] = [
      two,
      { ...statusUpdate(1), message: { messageId: 'm', role: 'ROLE_AGENT', parts: [] } },
      { task: { id: 5 } },
      { artifactUpdate: { taskId: 't', artifact: {} } },
      { artifactUpdate: { taskId: 't', artifact: { artifactId: 'a', parts: 'nope' } } },
      { statusUpdate: 'x' },
      { task: { id: 'x' }, message: 'nope' },
      { statusUpdate: { taskId: 't', status: { state: 'TASK_STATE_WORKING' }, metadata: 'md' } },
      {},
      { foo: 1 },
      'text',
      7,
    ];
    for (const raw of inputs) {
      const out = toWireEvent(raw);
      if (out === undefined) continue;
      assert.ok(wireKind(out), `${JSON.stringify(raw)} gave ${JSON.stringify(out)}`);
      assert.equal(Object.keys(out).length, 1, `${JSON.stringify(raw)} gave ${JSON.stringify(out)}`);
    }
  });
});
