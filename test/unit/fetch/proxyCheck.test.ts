// Card fetches through the user's proxy (VS Code's `http.proxy`): the proxy resolves and dials, so the
// name is resolved and checked before the fetch is handed to it. A real CONNECT proxy on 127.0.0.1
// tunnels whatever it is asked to the local HTTPS server, so anything that slips through is fetched
// for real (the test certificate is valid for localhost and agents.test) and shows in its tunnel list.
import * as assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { proxyCheckText } from '../../../src/core/proxyCheck';
import { fetchAgentCard, safeFetch } from '../../../src/node/safeFetch';
import type { Resolver, SafeFetchOptions } from '../../../src/node/safeFetch';
import { v1Card } from '../cards/fixtures';
import type { Running, TestPki } from './testServers';
import { makeTestPki, startConnectProxy, startHttps } from './testServers';
import { refused, resolvesTo, unresolvable } from './helpers';

let pki: TestPki;
let server: Running;
let proxy: Running & { tunnels: string[] };
let proxyUrl: string;

before(async () => {
  pki = makeTestPki();
  server = await startHttps(pki, (_req, res: ServerResponse) => {
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify(v1Card(`https://agents.test:${server.port}`)));
  });
  proxy = await startConnectProxy();
  proxyUrl = `http://127.0.0.1:${proxy.port}`;
});

after(async () => {
  await proxy.close();
  await server.close();
});

function viaProxy(extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return { proxy: proxyUrl, testHooks: { ca: pki.ca }, timeoutMs: 3000, ...extra };
}

describe('card fetch through http.proxy: names are checked before the proxy gets them', () => {
  // [what, host, resolver (undefined: the system resolver, /etc/hosts included)]
  const refusedNames: [string, string, Resolver | undefined][] = [
    ['localhost (system resolver)', 'localhost', undefined],
    ['LOCALHOST. spelled with a trailing dot (system resolver)', 'LOCALHOST.', undefined],
    ['a name resolving to 127.0.0.1', 'agents.test', resolvesTo('127.0.0.1')],
    ['a name resolving to ::1', 'agents.test', resolvesTo('::1')],
    ['a name resolving to a private address', 'agents.test', resolvesTo('10.0.0.5')],
    ['a name resolving to the metadata address', 'agents.test', resolvesTo('169.254.169.254')],
    ['a name resolving to CGNAT space', 'agents.test', resolvesTo('100.64.0.1')],
    ['a name resolving to 0.0.0.0', 'agents.test', resolvesTo('0.0.0.0')],
    ['a name resolving to ::ffff:127.0.0.1', 'agents.test', resolvesTo('::ffff:127.0.0.1')],
    ['a name resolving to a unique-local IPv6 address', 'agents.test', resolvesTo('fd00::1')],
    ['a name with one public and one private answer', 'agents.test', resolvesTo('93.184.215.14', '192.168.1.10')],
  ];
  for (const [what, host, resolve] of refusedNames) {
    it(`refuses ${what}, and the proxy sees nothing`, async () => {
      const tunnels = proxy.tunnels.length;
      const requests = server.requests.length;
      const e = await refused(
        fetchAgentCard(`https://${host}:${server.port}/card.json`, viaProxy(resolve ? { resolve } : {})),
        'blocked-address',
        /through the proxy.*baton\.privateHosts/s,
      );
      assert.ok(e.details.range && e.details.range !== 'unicast', e.details.range);
      assert.equal(proxy.tunnels.length, tunnels, 'no CONNECT reached the proxy');
      assert.equal(server.requests.length, requests);
    });
  }

  it('refuses a name it cannot resolve itself, and says what the user can do', async () => {
    const nxdomain = unresolvable('agents.test');
    const tunnels = proxy.tunnels.length;
    await refused(
      fetchAgentCard(`https://agents.test:${server.port}/card.json`, viaProxy({ resolve: nxdomain })),
      'dns',
      /before handing a fetch to your proxy.*baton\.privateHosts/s,
    );
    await refused(
      fetchAgentCard(`https://agents.test:${server.port}/card.json`, viaProxy({ resolve: resolvesTo() })),
      'dns',
    );
    assert.equal(proxy.tunnels.length, tunnels);
  });

  it('a resolver that never answers ends at the deadline, before the proxy is asked', async () => {
    const hanging: Resolver = () => new Promise(() => undefined);
    const tunnels = proxy.tunnels.length;
    const started = Date.now();
    await refused(
      fetchAgentCard(`https://agents.test:${server.port}/card.json`, viaProxy({ resolve: hanging, timeoutMs: 300 })),
      'timeout',
    );
    assert.ok(Date.now() - started < 2000);
    assert.equal(proxy.tunnels.length, tunnels);
  });

  it('a name resolving to public addresses goes through the proxy (by name), and the result says what was checked', async () => {
    const tunnels = proxy.tunnels.length;
    const r = await fetchAgentCard(
      `https://agents.test:${server.port}/card.json`,
      viaProxy({ resolve: resolvesTo('93.184.215.14', '2606:4700:4700::1111') }),
    );
    assert.ok(!r.notModified);
    assert.equal(r.pinning, 'proxy');
    assert.deepEqual(r.proxied, {
      proxy: `${proxyUrl}/`,
      host: 'agents.test',
      checked: 'public',
      addresses: ['93.184.215.14', '2606:4700:4700::1111'],
    });
    // The proxy is asked for the name, as corporate proxies that filter by host name expect.
    assert.deepEqual(proxy.tunnels.slice(tunnels), [`agents.test:${server.port}`]);
    const text = proxyCheckText(r.proxied);
    assert.match(
      text,
      new RegExp(
        `through the proxy ${proxyUrl}/; agents\\.test resolved to public addresses only \\(93\\.184\\.215\\.14, 2606:4700:4700::1111\\)`,
      ),
    );
    assert.match(text, /could not pin/);
  });

  it('a host in baton.privateHosts is fetched through the proxy unchecked, and says so', async () => {
    const r = await fetchAgentCard(
      `https://localhost:${server.port}/card.json`,
      viaProxy({ allowPrivateHosts: ['localhost'] }),
    );
    assert.ok(!r.notModified);
    assert.deepEqual(r.proxied, { proxy: `${proxyUrl}/`, host: 'localhost', checked: 'allowed-host', addresses: [] });
    assert.match(
      proxyCheckText(r.proxied),
      /localhost is listed in baton\.privateHosts, so its address was not checked/,
    );
  });

  it('the proxy’s credentials never show in what is reported', async () => {
    const withCredentials = `http://user:s3cret@127.0.0.1:${proxy.port}`;
    const e = await refused(
      safeFetch(
        `https://agents.test:${server.port}/`,
        viaProxy({ proxy: withCredentials, resolve: resolvesTo('10.0.0.5') }),
      ),
      'blocked-address',
    );
    assert.doesNotMatch(e.message, /s3cret/);
    const r = await safeFetch(
      `https://agents.test:${server.port}/`,
      viaProxy({ proxy: withCredentials, resolve: resolvesTo('93.184.215.14') }),
    );
    assert.equal(r.proxied?.proxy, `http://127.0.0.1:${proxy.port}/`);
  });

  it('a host in http.noProxy is fetched directly: resolved in the connection and pinned (regression)', async () => {
    const tunnels = proxy.tunnels.length;
    let calls = 0;
    const loopback: Resolver = async () => {
      calls++;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    await refused(
      safeFetch(`https://agents.test:${server.port}/`, viaProxy({ noProxy: ['.test'], resolve: loopback })),
      'blocked-address',
      /Refused to connect to agents\.test/,
    );
    assert.equal(calls, 1, 'one resolution, inside the connection');
    assert.equal(proxy.tunnels.length, tunnels);
  });
});
