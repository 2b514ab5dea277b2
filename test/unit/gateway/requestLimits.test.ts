// Per-request limits hold for every client, authenticated or not: headers and bodies that never finish
// are answered with a 408 that names the limit, a body with too many JSON members is refused before it
// is parsed, and other clients are served promptly while the hostile request is in progress.
import * as assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { bounded, rpcPost, suiteGateway } from './helpers';

/** Everything the server sends on a raw connection until it closes it (or `ms` pass). */
function readAll(socket: Socket, ms: number): Promise<{ text: string; closed: boolean; at: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    let text = '';
    const timer = setTimeout(() => resolve({ text, closed: false, at: Date.now() - started }), ms);
    socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closed: true, at: Date.now() - started });
    });
    socket.on('error', () => undefined);
  });
}

function rawConnection(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(port), hostname, () => resolve(s));
    s.once('error', reject);
  });
}

const bodyOf = (response: string): unknown => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('gateway: per-request time limits, also for authenticated clients', () => {
  const gw = suiteGateway({ requestLimits: { headersTimeoutMs: 600, idleMs: 400, totalMs: 1_500 } });

  /** A second client: the public card, timed. */
  const otherClient = async (): Promise<number> => {
    const started = Date.now();
    const r = await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    return Date.now() - started;
  };

  const head = (path: string, length: number) =>
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${gw.token}\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

  it('answers a JSON-RPC body that stops arriving with 408 naming the idle limit, and closes the connection', async () => {
    const s = await rawConnection(gw.url);
    const reading = readAll(s, 10_000);
    s.write(`${head('/a2a/echo', 1000)}{"jsonrpc":"2.0","id":7,`);
    assert.ok((await otherClient()) < 1_000, 'another client is served while the body hangs');
    const r = await reading;
    assert.ok(r.closed, `the connection was closed: ${r.text}`);
    assert.match(r.text, /^HTTP\/1\.1 408 /);
    const j = bodyOf(r.text) as { jsonrpc: string; error: { code: number; message: string } };
    assert.equal(j.jsonrpc, '2.0');
    assert.equal(typeof j.error.code, 'number');
    assert.match(j.error.message, /no data for 0\.4 s \(the gateway's body idle limit\)/);
  });

  it('answers an HTTP+JSON body that trickles in forever with 408 naming the total limit', async () => {
    const s = await rawConnection(gw.url);
    const reading = readAll(s, 10_000);
    s.write(`${head('/a2a/echo/message:send', 100_000)}{"message":"`);
    const drip = setInterval(() => s.writable && s.write('x'), 100);
    try {
      assert.ok((await otherClient()) < 1_000);
      const r = await reading;
      assert.ok(r.closed && r.at < 5_000, `closed after ${r.at} ms`);
      assert.match(r.text, /^HTTP\/1\.1 408 /);
      const j = bodyOf(r.text) as { error: { code: number; message: string } };
      assert.equal(j.error.code, 408);
      assert.match(j.error.message, /took longer than 1\.5 s \(the gateway's limit for a whole body\)/);
    } finally {
      clearInterval(drip);
    }
  });

  it('answers headers that never finish with 408 naming the headers limit', async () => {
    const s = await rawConnection(gw.url);
    const reading = readAll(s, 10_000);
    s.write(`POST /a2a/echo HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${gw.token}\r\n`);
    assert.ok((await otherClient()) < 1_000);
    const r = await reading;
    assert.ok(r.closed && r.at < 5_000, `closed after ${r.at} ms`);
    assert.match(r.text, /^HTTP\/1\.1 408 /);
    assert.match((bodyOf(r.text) as { error: { message: string } }).error.message, /headers must arrive within 0\.6 s/);
  });

  it('closes the connection of a request refused before its body was read (a wrong token) instead of reading the body on, and says so', async () => {
    const s = await rawConnection(gw.url);
    const reading = readAll(s, 10_000);
    s.write(`${head('/a2a/echo', 1000).replace(gw.token, 'not-the-token')}{"jsonrpc":`);
    const drip = setInterval(() => s.writable && s.write(' '), 100);
    try {
      const r = await reading;
      assert.match(r.text, /^HTTP\/1\.1 401 /);
      assert.ok(r.closed && r.at < 1_000, `closed after ${r.at} ms`);
      // A keep-alive client told nothing would send its next request on this connection and see it reset.
      const headers = r.text.slice(0, r.text.indexOf('\r\n\r\n')).toLowerCase();
      assert.match(headers, /\r\nconnection: close(\r\n|$)/);
      assert.doesNotMatch(headers, /keep-alive/);
    } finally {
      clearInterval(drip);
    }
  });

  it('still serves a normal request completely', async () => {
    const res = await rpcPost(
      `${gw.url}/a2a/echo`,
      { method: 'GetTask', params: { id: 'no-such-task' } },
      { Authorization: `Bearer ${gw.token}` },
    );
    const j = (await res.json()) as { error?: { message: string } };
    assert.match(j.error?.message ?? '', /not found/i);
  });
});

describe('gateway: work per request is bounded and other clients keep being served', () => {
  const gw = suiteGateway();
  const post = (body: string) => rpcPost(`${gw.url}/a2a/echo`, body, { Authorization: `Bearer ${gw.token}` });

  it('refuses a 3.8 MiB body with hundreds of thousands of members before parsing it, without stalling the event loop', async () => {
    const members = Array.from({ length: 300_000 }, (_, i) => `"k${i}":${i}`).join(',');
    const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"go"}],"metadata":{${members}}}}}`;
    assert.ok(body.length > 3.5 * 1024 * 1024);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const hostile = post(body);
    // Other clients, one after another, while the hostile request is in flight.
    const others: number[] = [];
    const serveOthers = (async () => {
      for (let i = 0; i < 5; i++) {
        const started = Date.now();
        const r = await fetch(`${gw.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } });
        await r.arrayBuffer();
        others.push(Date.now() - started);
      }
    })();
    const res = await bounded(hostile, 'the hostile request');
    await serveOthers;
    delay.disable();
    assert.equal(res.status, 413);
    const j = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
    assert.equal(j.jsonrpc, '2.0');
    assert.match(j.error.message, /more than 10000 JSON members and array items/);
    const maxDelayMs = delay.max / 1e6;
    // Generous: a stall is seconds; a shared CI machine adds tens of milliseconds.
    assert.ok(maxDelayMs < 500, `the event loop was blocked for ${maxDelayMs.toFixed(0)} ms`);
    assert.ok(Math.max(...others) < 2_000, `other clients took ${others.join(', ')} ms`);
  });

  it('refuses too many array items the same way, and accepts a large body within the limits', async () => {
    const items = `[${Array.from({ length: 20_000 }, () => '{}').join(',')}]`;
    const res = await post(
      `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"x","metadata":{"list":${items}}}}`,
    );
    assert.equal(res.status, 413);
    assert.match(
      ((await res.json()) as { error: { message: string } }).error.message,
      /more than 10000 JSON members and array items/,
    );
    // 6 MiB of text in a few members is fine: size is capped by bytes, not members.
    const big = await post(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'GetTask',
        params: { id: 'no-such-task', metadata: { pad: 'x'.repeat(6 * 1024 * 1024) } },
      }),
    );
    const j = (await big.json()) as { error?: { message: string } };
    assert.doesNotMatch(j.error?.message ?? '', /members|exceeds|nested/);
  });

  it('refuses a compressed body instead of inflating it', async () => {
    const res = await fetch(`${gw.url}/a2a/echo`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
        Authorization: `Bearer ${gw.token}`,
        'A2A-Version': '1.0',
      },
      body: new Uint8Array([0x1f, 0x8b, 0x08, 0x00]),
    });
    const j = (await res.json()) as { jsonrpc: string; error: { code: number; message: string } };
    assert.equal(j.jsonrpc, '2.0');
    assert.match(j.error.message, /Content-Encoding "gzip" is not supported; send the body uncompressed/);
  });
});
