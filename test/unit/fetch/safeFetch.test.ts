import * as assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { checkAddress, fetchAgentCard, cardUrlFor, pinningStatus, safeFetch } from '../../../src/node/safeFetch';
import type { Resolver, SafeFetchOptions } from '../../../src/node/safeFetch';
import { offOriginInterfaces } from '../../../src/core/agentCard';
import { v1Card } from '../cards/fixtures';
import type { Canary, Running, TestPki } from './testServers';
import { makeTestPki, startCanary, startConnectProxy, startHttp, startHttps } from './testServers';
import { refused, resolvesTo, unresolvable } from './helpers';

const loopback = resolvesTo('127.0.0.1');

let pki: TestPki;
let server: Running;
let base: string;
let cardJson: string;
const openHandles: ServerResponse[] = [];

function json(res: ServerResponse, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(body);
}

before(async () => {
  pki = makeTestPki();
  server = await startHttps(pki, (req, res) => {
    const url = req.url ?? '';
    if (url === '/.well-known/agent-card.json' || url === '/a2a/formatter/.well-known/agent-card.json') {
      if (req.headers['if-none-match'] === '"v1"') return void res.writeHead(304, { etag: '"v1"' }).end();
      return json(res, cardJson, { etag: '"v1"' });
    }
    if (url === '/card.json') return json(res, cardJson);
    if (url === '/page.json')
      return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><h1>Welcome</h1>');
    if (url === '/html-as.json') return json(res, '<html>oops</html>');
    if (url === '/text.json') return json(res, 'hello, not json');
    if (url === '/dup.json') return json(res, '{"name":"A","name":"B","supportedInterfaces":[]}');
    if (url === '/offorigin.json') {
      const c = v1Card(base);
      (c.supportedInterfaces as unknown[]).push({
        url: 'https://collector.example.net/a2a',
        protocolBinding: 'JSONRPC',
      });
      return json(res, JSON.stringify(c));
    }
    if (url === '/big.json') {
      // 5 MB, chunked: no content-length to decide on, the cap must hold while streaming.
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = (): void => {
        while (sent < 5 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.write('{"name":"big","pad":"');
      return pump();
    }
    if (url === '/big-declared.json')
      return void res
        .writeHead(200, { 'content-length': String(5 * 1024 * 1024) })
        .end(Buffer.alloc(5 * 1024 * 1024, 0x20));
    if (url === '/redirect.json')
      return void res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' }).end();
    if (url === '/missing.json') return void res.writeHead(404).end('not found');
    if (url === '/hang.json') return void openHandles.push(res); // never answers
    if (url === '/drip.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"name":"drip","x":"');
      const t = setInterval(() => (res.writableEnded || res.destroyed ? clearInterval(t) : res.write(' ')), 20);
      res.on('close', () => clearInterval(t));
      return;
    }
    res.writeHead(404).end();
  });
  base = `https://localhost:${server.port}`;
  cardJson = JSON.stringify(v1Card(base));
});

after(async () => {
  for (const r of openHandles) r.destroy();
  await server.close();
});

function allowed(extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return { allowPrivateHosts: ['localhost'], resolve: loopback, testHooks: { ca: pki.ca }, ...extra };
}

describe('safe fetch: successful fetches from an allowed local host over https (test CA)', () => {
  it('fetches a card from a base URL via /.well-known/agent-card.json, with its digest and ETag', async () => {
    const r = await fetchAgentCard(base, allowed());
    assert.equal(r.notModified, false);
    if (r.notModified) return;
    assert.equal(r.cardUrl, `${base}/.well-known/agent-card.json`);
    assert.equal(r.card.name, 'Formatter');
    assert.match(r.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(r.etag, '"v1"');
    assert.equal(r.raw, cardJson);
    assert.equal(r.pinning, 'allowed-host');
  });

  it('answers notModified for a matching If-None-Match', async () => {
    const r = await fetchAgentCard(`${base}/a2a/formatter`, allowed({ etag: '"v1"' } as SafeFetchOptions));
    assert.equal(r.notModified, true);
    assert.equal(server.requests.at(-1), '/a2a/formatter/.well-known/agent-card.json');
  });

  it('maps inputs to card URLs', () => {
    assert.equal(cardUrlFor('https://a.example'), 'https://a.example/.well-known/agent-card.json');
    assert.equal(cardUrlFor('https://a.example/a2a/x?y=1#f'), 'https://a.example/a2a/x/.well-known/agent-card.json');
    assert.equal(cardUrlFor('https://a.example/cards/x.json'), 'https://a.example/cards/x.json');
  });

  it('reports interfaces on another host than the card', async () => {
    const r = await fetchAgentCard(`${base}/offorigin.json`, allowed());
    assert.ok(!r.notModified);
    if (r.notModified) return;
    assert.deepEqual(
      offOriginInterfaces(r.card, r.cardUrl).map((i) => i.url),
      ['https://collector.example.net/a2a'],
    );
  });

  it('goes through a CONNECT proxy and says that the address was not pinned', async () => {
    const proxy = await startConnectProxy();
    try {
      const opts = allowed({ proxy: `http://127.0.0.1:${proxy.port}` });
      assert.equal(pinningStatus(base, opts).pinned, false);
      assert.match(pinningStatus(base, opts).reason ?? '', /cannot check or pin/);
      assert.equal(pinningStatus(base, { ...opts, noProxy: ['localhost'] }).pinned, true);
      const r = await fetchAgentCard(`${base}/card.json`, opts);
      assert.ok(!r.notModified);
      assert.equal(r.pinning, 'proxy');
      assert.deepEqual(proxy.tunnels, [`localhost:${server.port}`]);
      // Literal private addresses are still refused before anything reaches the proxy.
      await refused(
        fetchAgentCard(`https://10.0.0.1:${server.port}/card.json`, { ...opts, allowPrivateHosts: [] }),
        'blocked-address',
      );
      assert.equal(proxy.tunnels.length, 1);
    } finally {
      await proxy.close();
    }
  });
});

describe('safe fetch: bad answers give clear errors', () => {
  it('404', async () => {
    const e = await refused(fetchAgentCard(`${base}/missing.json`, allowed()), 'http-status', /404.*Check the URL/);
    assert.equal(e.details.status, 404);
  });
  it('HTML instead of JSON', async () => {
    await refused(fetchAgentCard(`${base}/page.json`, allowed()), 'not-json', /web page/);
    await refused(fetchAgentCard(`${base}/html-as.json`, allowed()), 'not-json');
    await refused(fetchAgentCard(`${base}/text.json`, allowed()), 'not-json');
  });
  it('a 5 MB card (streamed, and declared)', async () => {
    await refused(fetchAgentCard(`${base}/big.json`, allowed()), 'too-large', /256 KiB/);
    await refused(fetchAgentCard(`${base}/big-declared.json`, allowed()), 'too-large');
  });
  it('a card that redirects (to the metadata address): refused, not followed', async () => {
    const before = server.requests.length;
    const e = await refused(
      fetchAgentCard(`${base}/redirect.json`, allowed()),
      'redirect',
      /does not follow redirects/,
    );
    assert.equal(e.details.status, 302);
    assert.equal(server.requests.length, before + 1);
  });
  it('duplicate JSON keys', async () => {
    const e = await refused(fetchAgentCard(`${base}/dup.json`, allowed()), 'duplicate-key');
    assert.equal(e.details.path, 'name');
  });
  it('a server that never answers, and one that drips: the overall deadline ends both', async () => {
    await refused(fetchAgentCard(`${base}/hang.json`, allowed({ timeoutMs: 300 })), 'timeout', /did not answer/);
    await refused(fetchAgentCard(`${base}/drip.json`, allowed({ timeoutMs: 300 })), 'timeout');
  });
  it('an unreachable host (closed port), an unresolvable name, an untrusted certificate', async () => {
    const closed = await startCanary();
    const port = closed.port;
    await closed.close();
    await refused(fetchAgentCard(`https://localhost:${port}/card.json`, allowed()), 'connect', /Could not connect/);
    const nxdomain = unresolvable('nowhere.test');
    await refused(
      fetchAgentCard('https://nowhere.test/card.json', { resolve: nxdomain }),
      'dns',
      /could not be resolved/,
    );
    await refused(
      fetchAgentCard(`${base}/card.json`, { allowPrivateHosts: ['localhost'], resolve: loopback }),
      'tls',
      /certificate/,
    );
  });
  it('ports fetch refuses by standard (1, 25, 6000, …) say so, not "fetch failed"', async () => {
    for (const port of [1, 25, 6000, 6667]) {
      await refused(
        fetchAgentCard(`https://localhost:${port}/card.json`, allowed()),
        'connect',
        new RegExp(`Port ${port} is reserved for another protocol.*another port`),
      );
    }
  });

  it('loopback and private refusals say which it is: this machine is not "your own network"', async () => {
    await refused(
      safeFetch('http://127.0.0.1:8080/', {}),
      'insecure-scheme',
      /127\.0\.0\.1 is this machine, add "127\.0\.0\.1:8080" to the baton\.privateHosts/,
    );
    await refused(safeFetch('http://localhost/', {}), 'insecure-scheme', /localhost is this machine, add "localhost"/);
    await refused(
      safeFetch('http://agents.corp.test:9000/', {}),
      'insecure-scheme',
      /agents\.corp\.test is a host you trust, add "agents\.corp\.test:9000"/,
    );
    await refused(
      safeFetch('https://127.0.0.1:8443/', {}),
      'blocked-address',
      /loopback address.*If this agent runs on this machine/,
    );
    await refused(
      safeFetch('https://10.1.2.3/', {}),
      'blocked-address',
      /private address.*If this agent runs on a network you trust/,
    );
  });

  it('an abort from the caller', async () => {
    const ac = new AbortController();
    const p = fetchAgentCard(`${base}/hang.json`, allowed({ signal: ac.signal }));
    setTimeout(() => ac.abort(), 50);
    await refused(p, 'aborted');
  });
});

describe('safe fetch: address rules (a canary counts connections: zero for every refused case)', () => {
  let canary: Canary;
  before(async () => {
    canary = await startCanary();
  });
  after(async () => {
    await canary.close();
  });
  // dialOverride sends anything that slips past the checks to the canary instead of the real address.
  const guarded = (extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions => ({
    testHooks: { dialOverride: '127.0.0.1' },
    timeoutMs: 3000,
    ...extra,
  });

  it('the canary does count a connection that passes the checks (positive control)', async () => {
    const before = canary.connections();
    const publicName = resolvesTo('93.184.215.14');
    await refused(safeFetch(`https://public.test:${canary.port}/`, guarded({ resolve: publicName })), 'connect');
    assert.equal(canary.connections(), before + 1);
  });

  const literals = [
    '127.0.0.1',
    '127.1.2.3',
    '2130706433', // decimal form of 127.0.0.1: the URL parser normalises it, the check sees 127.0.0.1
    '0x7f.1',
    '169.254.169.254',
    '0.0.0.0',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '[::1]',
    '[::]',
    '[::ffff:10.0.0.1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:169.254.169.254]',
    '[::127.0.0.1]',
    '[64:ff9b::a00:1]',
    '[2002:a00:1::1]',
    '[fc00::1]',
    '[fd12:3456::1]',
    '[fe80::1]',
    '[ff02::1]',
  ];
  for (const host of literals) {
    it(`refuses ${host}`, async () => {
      const e = await refused(
        safeFetch(`https://${host}:${canary.port}/.well-known/agent-card.json`, guarded()),
        'blocked-address',
        /baton\.privateHosts/,
      );
      assert.ok(e.details.range && e.details.range !== 'unicast', e.details.range);
      assert.equal(canary.connections(), 1, 'no connection beyond the positive control');
    });
  }

  const names: [string, Resolver][] = [
    ['a name resolving to 127.0.0.1', resolvesTo('127.0.0.1')],
    ['a name resolving to the metadata address', resolvesTo('169.254.169.254')],
    ['a name resolving to ::ffff:10.0.0.1', resolvesTo('::ffff:10.0.0.1')],
    ['a name with one public and one private answer', resolvesTo('93.184.215.14', '10.1.2.3')],
  ];
  for (const [what, resolve] of names) {
    it(`refuses ${what}`, async () => {
      await refused(safeFetch(`https://agent.test:${canary.port}/`, guarded({ resolve })), 'blocked-address');
      assert.equal(canary.connections(), 1);
    });
  }

  it('DNS rebinding: resolution happens once, inside the connection; the next connection is checked again', async () => {
    const answers = ['93.184.215.14', '127.0.0.1'];
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: answers[Math.min(calls++, 1)], family: 4 }];
    // First connection: the public answer is checked and that checked answer is what is dialled (to the canary).
    await refused(safeFetch(`https://rebind.test:${canary.port}/`, guarded({ resolve: rebinding })), 'connect');
    assert.equal(calls, 1, 'no separate pre-check resolution that a rebinding name could answer differently');
    assert.equal(canary.connections(), 2);
    // Second connection: the name now answers 127.0.0.1 and is refused before connecting.
    await refused(safeFetch(`https://rebind.test:${canary.port}/`, guarded({ resolve: rebinding })), 'blocked-address');
    assert.equal(calls, 2);
    assert.equal(canary.connections(), 2);
  });

  it('refuses http for hosts not allowed, URLs with credentials, other schemes — before any connection', async () => {
    await refused(
      safeFetch(`http://agent.test:${canary.port}/`, guarded({ resolve: loopback })),
      'insecure-scheme',
      /baton\.privateHosts/,
    );
    await refused(safeFetch(`http://127.0.0.1:${canary.port}/`, guarded()), 'insecure-scheme');
    await refused(
      safeFetch(`https://user:secret@agent.test:${canary.port}/`, guarded({ resolve: loopback })),
      'credentials-in-url',
    );
    await refused(safeFetch('file:///etc/passwd', guarded()), 'insecure-scheme');
    await refused(safeFetch('not a url', guarded()), 'invalid-url');
    assert.equal(canary.connections(), 2);
  });

  it('an allowed private host may use http and a loopback address', async () => {
    const http = await startHttp((_req, res) => json(res, cardJson));
    try {
      const r = await fetchAgentCard(`http://127.0.0.1:${http.port}/card.json`, { allowPrivateHosts: ['127.0.0.1'] });
      assert.ok(!r.notModified);
      // …but allowing one host does not allow another private one.
      await refused(
        fetchAgentCard(`http://127.0.0.2:${http.port}/card.json`, { allowPrivateHosts: ['127.0.0.1'] }),
        'insecure-scheme',
      );
      await refused(
        fetchAgentCard(`https://127.0.0.2:${http.port}/card.json`, { allowPrivateHosts: ['127.0.0.1'] }),
        'blocked-address',
      );
    } finally {
      await http.close();
    }
  });
});

describe("safe fetch for webhooks (the gateway's push notifications)", () => {
  it('POSTs a body and returns the status without throwing on non-2xx', async () => {
    const got: string[] = [];
    const hook = await startHttps(pki, (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        got.push(`${req.method} ${req.headers['content-type'] ?? ''} ${body}`);
        res.writeHead(req.url === '/gone' ? 410 : 204).end();
      });
    });
    try {
      const o = allowed({ method: 'POST', body: '{"taskId":"t1"}', headers: { 'content-type': 'application/json' } });
      assert.equal((await safeFetch(`https://localhost:${hook.port}/hook`, o)).status, 204);
      assert.equal((await safeFetch(`https://localhost:${hook.port}/gone`, o)).status, 410);
      assert.deepEqual(got, ['POST application/json {"taskId":"t1"}', 'POST application/json {"taskId":"t1"}']);
    } finally {
      await hook.close();
    }
  });
});

describe('address classification', () => {
  it('refuses every IPv4 address in a special range and passes the rest (property, independent oracle)', () => {
    const special: [number, number][] = [
      [0x00000000, 8],
      [0x0a000000, 8],
      [0x64400000, 10],
      [0x7f000000, 8],
      [0xa9fe0000, 16],
      [0xac100000, 12],
      [0xc0000000, 24],
      [0xc0000200, 24],
      [0xc01fc400, 24],
      [0xc034c100, 24],
      [0xc0586300, 24],
      [0xc0a80000, 16],
      [0xc0afb000, 24],
      [0xc6120000, 15],
      [0xc6336400, 24],
      [0xcb007100, 24],
      [0xe0000000, 4],
      [0xf0000000, 4],
    ];
    const inSpecial = (n: number): boolean => special.some(([net, bits]) => n >>> (32 - bits) === net >>> (32 - bits));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), (n) => {
        const ip = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
        assert.equal(checkAddress(ip).allowed, !inSpecial(n), ip);
        // The same address written as IPv4-mapped IPv6 is always refused.
        assert.equal(checkAddress(`::ffff:${ip}`).allowed, false);
      }),
      { numRuns: 2000 },
    );
  });

  it('passes public unicast only', () => {
    for (const ip of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])
      assert.equal(checkAddress(ip).allowed, true, ip);
    const refusedRanges: [string, string][] = [
      ['127.0.0.1', 'loopback'],
      ['169.254.169.254', 'linkLocal'],
      ['100.64.1.1', 'carrierGradeNat'],
      ['::ffff:8.8.8.8', 'ipv4Mapped'],
      ['64:ff9b::808:808', 'rfc6052'],
      ['2002:808:808::1', '6to4'],
      ['2001::1', 'teredo'],
      ['fd00::1', 'uniqueLocal'],
      ['not-an-ip', 'invalid'],
    ];
    for (const [ip, range] of refusedRanges) assert.deepEqual(checkAddress(ip), { allowed: false, range }, ip);
    // IPv4-compatible (deprecated) and unassigned IPv6 space are not public either.
    for (const ip of ['::8.8.8.8', '::7f00:1', '4000::1', '100::1']) assert.equal(checkAddress(ip).allowed, false, ip);
  });
});
